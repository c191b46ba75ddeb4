package contextual

// Uniform plays an action drawn uniformly from each decision set and
// learns nothing: the baseline a contextual bandit must beat (on a data
// set of K classes its expected loss is 1 - 1/K). It needs no privacy,
// since it never looks at a reward.
type Uniform struct {
	s       Setting
	pending bool
}

// NewUniform returns the uniform policy; it draws from s.Rand.
func NewUniform(s Setting) (*Uniform, error) {
	if s.Rand == nil {
		return nil, inputf("uniform play needs Setting.Rand")
	}
	return &Uniform{s: s}, nil
}

// Choose draws an action uniformly.
func (u *Uniform) Choose(actions [][]float64) (int, error) {
	if u.pending {
		return 0, inputf("Choose twice without an Update")
	}
	if len(actions) == 0 {
		return 0, inputf("empty decision set")
	}
	u.pending = true
	return u.s.Rand.IntN(len(actions)), nil
}

// Update ignores the reward.
func (u *Uniform) Update(float64) error {
	if !u.pending {
		return inputf("Update without a Choose")
	}
	u.pending = false
	return nil
}
