package personalizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/media"
	"github.com/dpbandit/dpbandit/service/rank"
)

// The Personalizer management operations (configurations/service,
// configurations/policy, model, model/properties, logs, logs/properties)
// of its v1.0 and v1.1-preview.3 specifications, on the experiment of
// the request's key; every other Personalizer path is a 404 in
// Personalizer's error shape. What each change means for privacy:
// docs/personalizer.md.

// management adds the management routes under base (v11: the
// v1.1-preview.3 version's, whose configuration has more fields).
func management(routes map[string]Handler, base string, v11 bool) {
	routes["GET "+base+"/configurations/service"] = func(r *http.Request, x *engine.Experiment) (int, any, error) {
		return 200, serviceConfig(x, v11), nil
	}
	routes["PUT "+base+"/configurations/service"] = func(r *http.Request, x *engine.Experiment) (int, any, error) {
		return putServiceConfig(r, x, v11)
	}
	routes["GET "+base+"/configurations/policy"] = handlePolicyGet
	routes["PUT "+base+"/configurations/policy"] = handlePolicyPut
	routes["DELETE "+base+"/configurations/policy"] = handlePolicyDelete
	routes["GET "+base+"/model"] = handleModelGet
	// Model_Delete (Model_Reset): the learner starts over; the ledger
	// keeps every debit.
	routes["DELETE "+base+"/model"] = applySetting(define.Setting{Reset: true})
	routes["GET "+base+"/model/properties"] = handleModelProperties
	routes["PUT "+base+"/model"] = handleModelImport
	// Log_Delete: the stored rewards a release covers are deleted
	// (engine.Experiment.forgetLog).
	routes["DELETE "+base+"/logs"] = applySetting(define.Setting{LogsDeleted: true})
	routes["GET "+base+"/logs/properties"] = handleLogsProperties
}

// handleModelImport is Personalizer's model import, not offered: a
// model made elsewhere would carry what no release of this experiment
// paid for (404 ResourceNotFound, as for any operation not offered).
func handleModelImport(r *http.Request, _ *engine.Experiment) (int, any, error) {
	return 0, nil, fault.Errorf(fault.NotFound, "%s %s: importing a model is not offered: a model learned elsewhere did not go through this experiment's privacy ledger (docs/personalizer.md)", r.Method, r.URL.Path)
}

// serviceConfiguration is Personalizer's ServiceConfiguration (v1.1-preview.3's
// fields omitted in v1.0's answers).
type serviceConfiguration struct {
	RewardWaitTime            *string  `json:"rewardWaitTime"`
	DefaultReward             *float64 `json:"defaultReward"`
	RewardAggregation         *string  `json:"rewardAggregation"`
	ExplorationPercentage     *float64 `json:"explorationPercentage"`
	ModelExportFrequency      *string  `json:"modelExportFrequency"`
	LogMirrorEnabled          *bool    `json:"logMirrorEnabled,omitempty"`
	LogMirrorSasURI           *string  `json:"logMirrorSasUri,omitempty"`
	LogRetentionDays          *int     `json:"logRetentionDays"`
	LastConfigurationEditDate *string  `json:"lastConfigurationEditDate,omitempty"`
	LearningMode              *string  `json:"learningMode,omitempty"`
	IsAutoOptimizationEnabled *bool    `json:"isAutoOptimizationEnabled,omitempty"`
	AutoOptimizationFrequency *string  `json:"autoOptimizationFrequency,omitempty"`
	AutoOptimizationStartDate *string  `json:"autoOptimizationStartDate,omitempty"`
}

// rewardAggregation is the one aggregation the service honours: the
// first reward of an event counts (its privacy accounting charges one
// reward per event).
const rewardAggregation = "earliest"

// serviceConfig returns an experiment's settings as Personalizer's
// ServiceConfiguration: durations as TimeSpans ("00:10:00", v1.0's
// examples) or ISO 8601 ("PT10M", v1.1-preview.3's).
func serviceConfig(x *engine.Experiment, v11 bool) serviceConfiguration {
	d, cur := x.Settings()
	wait, export := formatSpan(d.RewardWindowSeconds, v11), formatSpan(cur.ModelExportSeconds, v11)
	agg, off := rewardAggregation, false
	reward, e, days := 0.0, d.Exploration, cur.LogRetentionDays
	if d.DefaultReward != nil {
		reward = *d.DefaultReward
	}
	c := serviceConfiguration{RewardWaitTime: &wait, DefaultReward: &reward, RewardAggregation: &agg, ExplorationPercentage: &e,
		ModelExportFrequency: &export, LogMirrorEnabled: &off, LogRetentionDays: &days}
	if v11 {
		edited, mode := stamp(time.Unix(0, cur.Edited)), cur.Mode
		c.LastConfigurationEditDate, c.LearningMode, c.IsAutoOptimizationEnabled = &edited, &mode, &off
	}
	return c
}

// putServiceConfig is ServiceConfiguration_Update: 200 with the new
// configuration, or 400 naming the field that cannot be honoured.
func putServiceConfig(r *http.Request, x *engine.Experiment, v11 bool) (int, any, error) {
	var c serviceConfiguration
	if err := readJSON(r, &c); err != nil {
		return 0, nil, err
	}
	d, cur := x.Settings()
	for _, req := range []struct {
		field string
		set   bool
	}{{"rewardWaitTime", c.RewardWaitTime != nil}, {"defaultReward", c.DefaultReward != nil}, {"rewardAggregation", c.RewardAggregation != nil},
		{"explorationPercentage", c.ExplorationPercentage != nil}, {"modelExportFrequency", c.ModelExportFrequency != nil}, {"logRetentionDays", c.LogRetentionDays != nil}} {
		if !req.set {
			return 0, nil, badField(req.field, "is required")
		}
	}
	wait, err := parseSpan(*c.RewardWaitTime)
	if err != nil {
		return 0, nil, badField("rewardWaitTime", "%v", err)
	}
	export, err := parseSpan(*c.ModelExportFrequency)
	if err != nil || export <= 0 {
		return 0, nil, badField("modelExportFrequency", "must be a positive duration, got %q", *c.ModelExportFrequency)
	}
	switch {
	case *c.RewardAggregation != rewardAggregation:
		return 0, nil, badField("rewardAggregation", "only %q is honoured (the first reward of an event counts: the privacy ledger charges one reward per event), got %q", rewardAggregation, *c.RewardAggregation)
	case *c.ExplorationPercentage == 0:
		return 0, nil, badField("explorationPercentage", "must lie in (0, 1]: every logged propensity stays positive, got 0")
	case c.LogMirrorEnabled != nil && *c.LogMirrorEnabled || c.LogMirrorSasURI != nil && *c.LogMirrorSasURI != "":
		return 0, nil, badField("logMirrorEnabled", "log mirroring is not offered: the log is GET /v1/experiments/{id}/log")
	case c.IsAutoOptimizationEnabled != nil && *c.IsAutoOptimizationEnabled:
		return 0, nil, badField("isAutoOptimizationEnabled", "automatic optimization is not offered")
	}
	days := *c.LogRetentionDays
	switch least := minRetentionDays(wait); {
	case days < -1 || days == 0:
		return 0, nil, badField("logRetentionDays", "must be -1 (indefinitely) or a positive number of days, got %d", days)
	case days != -1 && days < least:
		return 0, nil, badField("logRetentionDays", "must be -1 or at least the reward wait time plus 1 day, rounded up (InvalidLogRetentionDays): %d days here, got %d", least, days)
	}
	mode := cur.Mode
	if c.LearningMode != nil {
		mode = *c.LearningMode
	}
	if mode != cur.Mode {
		old := 0.0
		if d.DefaultReward != nil {
			old = *d.DefaultReward
		}
		if wait != d.RewardWindowSeconds || *c.DefaultReward != old {
			return 0, nil, badField("learningMode", "changing the learning mode and defaultReward, rewardWaitTime or rewardAggregation in one update is not allowed (InvalidLearningModeServiceConfiguration): make the mode change, then the others")
		}
	}
	if !(wait > 0) {
		return 0, nil, badField("rewardWaitTime", "must be positive, got %q", *c.RewardWaitTime)
	}
	s := define.Setting{RewardWindowSeconds: wait, DefaultReward: c.DefaultReward, Exploration: *c.ExplorationPercentage,
		Mode: mode, LogRetentionDays: &days, ModelExportSeconds: export}
	if err := configure(r, x, s); err != nil {
		return 0, nil, err
	}
	return 200, serviceConfig(x, v11), nil
}

// configure makes a setting, a refused one a 400 naming its field.
func configure(r *http.Request, x *engine.Experiment, s define.Setting) error {
	err := x.Configure(r.Context(), s)
	var se *define.SettingError
	if errors.As(err, &se) {
		return fault.Errorf(fault.Invalid, "%s", se.Error())
	}
	return err
}

// badField is a 400 naming a field of the request.
func badField(field, f string, a ...any) error {
	return fault.Errorf(fault.Invalid, "%s: %s", field, fmt.Sprintf(f, a...))
}

// readJSON reads a JSON body (media.ReadJSON) into v as Personalizer
// reads its bodies (define.DecodePz: field names in any case).
func readJSON(r *http.Request, v any) error {
	raw, err := media.ReadJSON(r)
	if err != nil {
		return err
	}
	return define.DecodePz(raw, v, "the request")
}

// policyContract is Personalizer's PolicyContract: the learner as a dpbandit
// catalogue spec in arguments.
type policyContract struct {
	Name      *string `json:"name"`
	Arguments *string `json:"arguments"`
}

func policyOf(x *engine.Experiment) policyContract {
	d, cur := x.Settings()
	name := cur.PolicyName
	if name == "" {
		name = define.AlgorithmName(d.Algorithm)
	}
	return policyContract{&name, &d.Algorithm}
}

func handlePolicyGet(r *http.Request, x *engine.Experiment) (int, any, error) {
	return 200, policyOf(x), nil
}

// handlePolicyPut is Policy_Update: a new learner, which starts over.
func handlePolicyPut(r *http.Request, x *engine.Experiment) (int, any, error) {
	var p policyContract
	if err := readJSON(r, &p); err != nil {
		return 0, nil, err
	}
	switch {
	case p.Name == nil || *p.Name == "" || len(*p.Name) > 256:
		return 0, nil, badField("name", "is required, of 1 to 256 characters")
	case p.Arguments == nil || *p.Arguments == "" || len(*p.Arguments) > 1024:
		return 0, nil, badField("arguments", "is required: a private contextual algorithm of dpbandit's catalogue (dpbandit list), e.g. \"adac-oful:lambda=30\", of at most 1024 characters")
	}
	if err := configure(r, x, define.Setting{Algorithm: *p.Arguments, PolicyName: *p.Name}); err != nil {
		return 0, nil, err
	}
	return 200, policyOf(x), nil
}

// handlePolicyDelete is Policy_Delete (Policy_Reset): the default
// learner, which starts over.
func handlePolicyDelete(r *http.Request, x *engine.Experiment) (int, any, error) {
	if err := configure(r, x, define.Setting{Algorithm: define.DefaultAlgorithm}); err != nil {
		return 0, nil, err
	}
	return 200, policyOf(x), nil
}

// handleModelGet is Model_Get: the released estimate, as an octet
// stream of JSON (rank.Model).
func handleModelGet(r *http.Request, x *engine.Experiment) (int, any, error) {
	m, err := rank.Export(r.Context(), x)
	if err != nil {
		return 0, nil, err
	}
	for _, v := range m.Theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, nil, fault.Errorf(fault.Internal, "the estimate is not finite")
		}
	}
	b, err := json.Marshal(m)
	return 200, RawBody{"application/octet-stream", b}, err
}

// applySetting returns the handler of an operation that is one change
// of the settings, s: it answers 204 once s is made.
func applySetting(s define.Setting) Handler {
	return func(r *http.Request, x *engine.Experiment) (int, any, error) {
		return 204, nil, configure(r, x, s)
	}
}

// stamp is a time as Personalizer's answers write it: RFC 3339 in UTC.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// modelProperties is the specification's ModelProperties: when the
// learner started (creation or reset) and when it last released.
type modelProperties struct {
	CreationTime     string `json:"creationTime"`
	LastModifiedTime string `json:"lastModifiedTime"`
}

// handleModelProperties is Model_GetProperties.
func handleModelProperties(r *http.Request, x *engine.Experiment) (int, any, error) {
	c, m := rank.ModelTimes(x)
	return 200, modelProperties{stamp(c), stamp(m)}, nil
}

// dateRange is the specification's DateRange (Log_GetProperties').
type dateRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// handleLogsProperties is Log_GetProperties: the log's dateRange, from
// the experiment's creation or the last deletion of its log, or the
// retention's cutoff when later (engine.Experiment.LogCutoff), to now.
func handleLogsProperties(r *http.Request, x *engine.Experiment) (int, any, error) {
	_, cur := x.Settings()
	now := x.Now()
	return 200, map[string]dateRange{"dateRange": {stamp(time.Unix(0, max(cur.LogsFrom, x.LogCutoff(now)))), stamp(now)}}, nil
}

// Durations: a TimeSpan "[d.]hh:mm:ss[.fffffff]" (v1.0's examples) or
// an ISO 8601 duration "P[nD][T[nH][nM][nS]]" (v1.1-preview.3's).
var (
	timeSpan = regexp.MustCompile(`^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)$`)
	isoSpan  = regexp.MustCompile(`^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)
)

// parseSpan returns a duration's seconds.
func parseSpan(s string) (float64, error) {
	num := func(v string) float64 {
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	if m := timeSpan.FindStringSubmatch(s); m != nil {
		return num(m[1])*86400 + num(m[2])*3600 + num(m[3])*60 + num(m[4]), nil
	}
	if m := isoSpan.FindStringSubmatch(s); m != nil && s != "P" && s[len(s)-1] != 'T' {
		return num(m[1])*86400 + num(m[2])*3600 + num(m[3])*60 + num(m[4]), nil
	}
	return 0, fmt.Errorf("%q is neither a TimeSpan (\"00:10:00\") nor an ISO 8601 duration (\"PT10M\")", s)
}

// formatSpan writes seconds as a TimeSpan or an ISO 8601 duration.
func formatSpan(sec float64, iso bool) string {
	d := time.Duration(math.Round(sec * float64(time.Second)))
	days, rest := d/(24*time.Hour), d%(24*time.Hour)
	h, m, s := rest/time.Hour, rest%time.Hour/time.Minute, rest%time.Minute
	secs := strconv.FormatFloat(s.Seconds(), 'f', -1, 64)
	if !iso {
		out := fmt.Sprintf("%02d:%02d:%02d", h, m, s/time.Second)
		if frac := s % time.Second; frac != 0 {
			out = fmt.Sprintf("%02d:%02d:%s", h, m, strconv.FormatFloat(100+s.Seconds(), 'f', -1, 64)[1:])
		}
		if days > 0 {
			out = fmt.Sprintf("%d.%s", days, out)
		}
		return out
	}
	out := "P"
	if days > 0 {
		out += fmt.Sprintf("%dD", days)
	}
	if rest == 0 {
		if days == 0 {
			return "PT0S"
		}
		return out
	}
	out += "T"
	if h > 0 {
		out += fmt.Sprintf("%dH", h)
	}
	if m > 0 {
		out += fmt.Sprintf("%dM", m)
	}
	if s > 0 {
		out += secs + "S"
	}
	return out
}

// minRetentionDays is the least logRetentionDays with a reward wait of
// wait seconds: the wait plus one day, rounded up to whole days (the
// specification's InvalidLogRetentionDays), so that every event older
// than the retention is settled.
func minRetentionDays(wait float64) int {
	return int(math.Ceil(wait/86400 + 1))
}
