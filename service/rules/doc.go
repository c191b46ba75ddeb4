// Package rules holds the serving rules of an experiment, apart from the
// experiment that runs them (service/engine): the exploration draw of
// every decision (Explore: around the policy's arm online, around the
// baseline in a Personalizer experiment's apprentice and logging only
// modes), apprentice mode's test (Apprentice: its block statistic, its
// Freedman and Gaussian lower confidence bound, the switch), logging
// only's operations (LoggingOnlySince), and log retention's arithmetic
// (RetentionCutoff, Sweep, Covered).
//
// Its values hold state and math only. The engine keeps them in its
// Experiment and calls them at its hooks, under its own lock; it does
// everything that touches the experiment's tape, its records, the store
// or the change being built. Nothing here draws noise or reads a clock:
// an apprentice block is released by the engine on its tape (drawn once,
// replayed after a restart) and the released value is passed in
// (Apprentice.Released); random words and times are passed in too.
package rules
