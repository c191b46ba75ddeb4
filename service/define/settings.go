package define

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpbandit/dpbandit/catalog"
)

// Learning modes of a Personalizer experiment (its service
// configuration's learningMode).
const (
	// ModeOnline serves the learner's choices (with exploration).
	ModeOnline = "Online"
	// ModeApprentice serves the baseline action (the first eligible
	// action of a rank, a slot's baselineAction: Baseline) while the learner learns from what is served,
	// until the off-policy test says the learner's choices beat it
	// (service/rules, apprentice.go).
	ModeApprentice = "Apprentice"
	// ModeLoggingOnly serves the baseline action (Baseline) with
	// exploration around it, as apprentice mode does, and logs: the
	// learner takes no decision and no reward, and no reward is debited
	// (service/rules, loggingonly.go).
	ModeLoggingOnly = "LoggingOnly"
)

// Setting is one change of an experiment's settings after its creation
// (the Personalizer surface's configurations, model and logs
// operations), kept in its definition (Definition.Settings) in the order
// made, so that it reaches the store, a restart and the replicas with
// the definition. It is an operation of its own, numbered From: it takes
// effect for the operations after From, so that a restart replays every
// earlier operation under the settings it was made under. A zero field
// leaves its setting unchanged.
type Setting struct {
	// From is the operation number of the change.
	From int64 `json:"from"`
	// At is when it was made, unix nanoseconds.
	At int64 `json:"at"`
	// RewardWindowSeconds, DefaultReward and Exploration replace the
	// Spec's.
	RewardWindowSeconds float64  `json:"reward_window_seconds,omitempty"`
	DefaultReward       *float64 `json:"default_reward,omitempty"`
	Exploration         float64  `json:"exploration,omitempty"`
	// Mode is the learning mode (ModeOnline, ModeApprentice,
	// ModeLoggingOnly).
	Mode string `json:"learning_mode,omitempty"`
	// Algorithm replaces the learner (a catalogue spec); PolicyName is
	// the name the client gave it.
	Algorithm  string `json:"algorithm,omitempty"`
	PolicyName string `json:"policy_name,omitempty"`
	// Reset starts the learner over at From (a model reset, and every
	// change of Algorithm): the events pending then are not learned.
	Reset bool `json:"reset,omitempty"`
	// LogsDeleted marks a deletion of the log at From.
	LogsDeleted bool `json:"logs_deleted,omitempty"`
	// LogRetentionDays (-1: indefinitely) and ModelExportSeconds are
	// Personalizer's settings as the client set them (what they mean
	// here: docs/personalizer.md).
	LogRetentionDays   *int    `json:"log_retention_days,omitempty"`
	ModelExportSeconds float64 `json:"model_export_seconds,omitempty"`
}

// Current is what an experiment's settings add to its Spec once applied
// (Definition.Effective).
type Current struct {
	// Mode is the learning mode (ModeOnline unless set).
	Mode string
	// PolicyName names the learner as the client named it ("": its
	// algorithm's name, AlgorithmName).
	PolicyName string
	// LogRetentionDays is the retention the client set (-1: none set,
	// the log is kept as the service keeps it).
	LogRetentionDays int
	// ModelExportSeconds is the model export frequency the client set
	// (300 unless set).
	ModelExportSeconds float64
	// Edited is when the last setting was made; ModelCreated when the
	// learner last started (creation or reset); LogsFrom when the log
	// last started (creation or deletion): unix nanoseconds.
	Edited, ModelCreated, LogsFrom int64
	// LastReset is the operation of the last reset (0: none): the events
	// decided up to it and pending at it are not learned.
	LastReset int64
	// Applied counts the settings applied.
	Applied int
}

// DefaultAlgorithm is a Personalizer experiment's learner when none is
// given (configurations/policy's DELETE returns to it).
const DefaultAlgorithm = defaultAlgorithm

// Defaults of Current.
const (
	defaultModelExportSeconds = 300
)

// Effective returns the definition as it stands for operation next (its
// settings with From < next applied to its Spec; Settings kept whole)
// and what the settings add.
func (d Definition) Effective(next int64) (Definition, Current) {
	c := Current{Mode: ModeOnline, LogRetentionDays: -1, ModelExportSeconds: defaultModelExportSeconds,
		Edited: d.Created, ModelCreated: d.Created, LogsFrom: d.Created}
	for _, s := range d.Settings {
		if s.From >= next {
			break
		}
		d.apply(s, &c)
	}
	return d, c
}

// apply applies one setting to d and c.
func (d *Definition) apply(s Setting, c *Current) {
	if s.RewardWindowSeconds != 0 {
		d.RewardWindowSeconds = s.RewardWindowSeconds
	}
	if s.DefaultReward != nil {
		r := *s.DefaultReward
		d.DefaultReward = &r
	}
	if s.Exploration != 0 {
		d.Exploration = s.Exploration
	}
	if s.Mode != "" {
		c.Mode = s.Mode
	}
	if s.Algorithm != "" {
		d.Algorithm, c.PolicyName = s.Algorithm, s.PolicyName
	}
	if s.LogRetentionDays != nil {
		c.LogRetentionDays = *s.LogRetentionDays
	}
	if s.ModelExportSeconds != 0 {
		c.ModelExportSeconds = s.ModelExportSeconds
	}
	if s.Reset {
		c.ModelCreated, c.LastReset = s.At, s.From
	}
	if s.LogsDeleted {
		c.LogsFrom = s.At
	}
	c.Edited = s.At
	c.Applied++
}

// AlgorithmName returns the name of a catalogue spec's algorithm
// ("adac-oful" of "adac-oful:lambda=30").
func AlgorithmName(spec string) string {
	a, err := catalog.Parse(spec)
	if err != nil {
		return spec
	}
	return a.Name
}

// maxSettings bounds the changes of an experiment's settings: each is
// kept in its definition and read by every replay.
const maxSettings = 1000

// LastSetting returns the operation of the last setting (0: none).
func (d Definition) LastSetting() int64 {
	if len(d.Settings) == 0 {
		return 0
	}
	return d.Settings[len(d.Settings)-1].From
}

// ErrSetting marks a setting refused; SettingError names its field.
var ErrSetting = errors.New("service: setting refused")

// SettingError is a setting refused, with the field at fault (the
// Personalizer name the client sent).
type SettingError struct {
	Field, Message string
}

func (e *SettingError) Error() string { return e.Field + ": " + e.Message }

// Unwrap makes a SettingError an ErrSetting.
func (e *SettingError) Unwrap() error { return ErrSetting }

func settingErr(field, f string, a ...any) error {
	return &SettingError{Field: field, Message: fmt.Sprintf(f, a...)}
}

// With returns the definition with s appended to its settings, checked
// against what the experiment must keep: the rewards' range holds the
// default reward, the exploration stays in (0, 1] (every logged
// propensity positive), the window in its bounds, and a new learner is a
// private contextual algorithm of the catalogue that costs a reward what
// the experiment's ledger charges (NanoRho): no setting can lower the
// privacy guarantee or its accounting.
func (d Definition) With(s Setting) (Definition, error) {
	if len(d.Settings) >= maxSettings {
		return d, settingErr("settings", "the experiment's settings have changed %d times, the most it takes (each change is replayed by every restart): create another experiment", maxSettings)
	}
	if w := s.RewardWindowSeconds; w != 0 && (!(w >= 0.001) || w > maxWindowSec) {
		return d, settingErr("rewardWaitTime", "must lie in [0.001 s, %d s], got %v s", maxWindowSec, w)
	}
	if r := s.DefaultReward; r != nil && !(*r >= d.RewardRange[0] && *r <= d.RewardRange[1]) {
		return d, settingErr("defaultReward", "%v lies outside the rewards' range [%v, %v]", *r, d.RewardRange[0], d.RewardRange[1])
	}
	if e := s.Exploration; e != 0 && !(e > 0 && e <= 1) {
		return d, settingErr("explorationPercentage", "must lie in (0, 1] (every logged propensity stays positive), got %v", e)
	}
	if s.Mode != "" && s.Mode != ModeOnline && s.Mode != ModeApprentice && s.Mode != ModeLoggingOnly {
		return d, settingErr("learningMode", "must be %q, %q or %q, got %q", ModeOnline, ModeApprentice, ModeLoggingOnly, s.Mode)
	}
	if s.Algorithm != "" {
		if err := d.checkLearner(s.Algorithm); err != nil {
			return d, err
		}
	}
	d.Settings = append(slices.Clone(d.Settings), s)
	if eff, cur := d.Effective(math.MaxInt64); cur.Mode == ModeApprentice && eff.Exploration > MaxApprenticeExploration {
		return d, settingErr("explorationPercentage", "apprentice mode takes an exploration of at most %v (its test bounds the baseline's inverse propensity by 2), got %v", MaxApprenticeExploration, eff.Exploration)
	}
	return d, nil
}

// MaxApprenticeExploration is the largest exploration in apprentice
// mode: the baseline's propensity stays at least 1/2.
const MaxApprenticeExploration = 0.5

// checkLearner checks a new learner (configurations/policy's arguments).
func (d Definition) checkLearner(alg string) error {
	nd := d
	nd.Algorithm = alg
	nd.Arms, nd.Dim, nd.RewardRange = 0, 0, [2]float64{}
	sp := nd.Spec
	a, _, nano, err := sp.validate()
	if err != nil {
		return settingErr("arguments", "%v", err)
	}
	if a.Kind != catalog.Contextual {
		return settingErr("arguments", "%s is not a contextual algorithm: a personalizer experiment's learner chooses among each rank's actions", a.Name)
	}
	if nano != d.NanoRho {
		return settingErr("arguments", "%s would cost a reward %v rho in the ledger, the experiment charges %v: a learner must cost what the experiment's ledger charges", a.Name, float64(nano)/1e9, float64(d.NanoRho)/1e9)
	}
	return nil
}
