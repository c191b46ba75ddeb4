package bandit

// Identifier is implemented by best-arm identification policies with
// fixed confidence: policies with a stopping rule that, once it fires,
// recommend one arm as the best with probability at least 1 - delta of
// being right. Until then they explore; after the stop they play the
// recommended arm (a simulation to a horizon then costs one plan).
type Identifier interface {
	// Decision returns the recommended arm and tau, the number of pulls
	// made when the stopping rule fired; ok is false while the rule has
	// not fired.
	Decision() (arm int, tau int64, ok bool)
}
