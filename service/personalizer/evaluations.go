package personalizer

import (
	"crypto/rand"
	"errors"
	"net/http"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/evaluation"
	"github.com/dpbandit/dpbandit/service/fault"
)

// Personalizer's Evaluations operations (Evaluations_Create, _List,
// _Get, _Delete of its v1.0 and v1.1-preview.3 specifications) over
// package evaluation: an evaluation is computed when it is created,
// released once and stored, so that it is answered "completed" at once
// and every read answers it as stored. Its results are in
// Personalizer's fields (pzEvaluation) and, under the one key the
// specification does not have, "dpbandit", in package evaluation's own
// (evaluation.Evaluation: every release, its noise and budget).
// docs/personalizer.md, Evaluations.

// evaluations adds the evaluations routes under base.
func evaluations(routes map[string]Handler, base string, v11 bool) {
	routes["POST "+base+"/evaluations"] = func(r *http.Request, x *engine.Experiment) (int, any, error) {
		code, body, err := createEvaluation(r, x, base, v11)
		return evalAnswer(v11, code, body, err)
	}
	routes["GET "+base+"/evaluations"] = func(r *http.Request, x *engine.Experiment) (int, any, error) {
		evs, err := evaluation.List(r.Context(), x)
		list := make([]pzEvaluation, len(evs))
		for i, ev := range evs {
			list[i] = evaluationOf(ev, v11)
		}
		return evalAnswer(v11, 200, list, err)
	}
	routes["GET "+base+"/evaluations/{evaluationId}"] = func(r *http.Request, x *engine.Experiment) (int, any, error) {
		id := r.PathValue("evaluationId")
		if err := define.CheckID("evaluationId", id); err != nil {
			return 0, nil, err
		}
		ev, err := evaluation.Get(r.Context(), x, id)
		return evalAnswer(v11, 200, evaluationOf(ev, v11), err)
	}
	routes["DELETE "+base+"/evaluations/{evaluationId}"] = func(r *http.Request, x *engine.Experiment) (int, any, error) {
		id := r.PathValue("evaluationId")
		if err := define.CheckID("evaluationId", id); err != nil {
			return 0, nil, err
		}
		return evalAnswer(v11, 204, nil, evaluation.Delete(r.Context(), x, id))
	}
}

// evalAnswer gives an evaluation.Error its own Personalizer code
// (Coded; its status is its kind's). The codes are v1.1-preview.3's
// (InvalidEvaluationContract, EvaluationNotFound, NoLogsExistInDateRange,
// OperationNotAllowed); v1.0's specification has only the first two,
// and its answers name every refused creation InvalidEvaluationContract.
func evalAnswer(v11 bool, code int, body any, err error) (int, any, error) {
	var ee *evaluation.Error
	if errors.As(err, &ee) {
		name := ee.Code
		if !v11 && name != "EvaluationNotFound" {
			name = "InvalidEvaluationContract"
		}
		return 0, nil, &Coded{Code: name, Err: err}
	}
	return code, body, err
}

// evaluationContract is the specification's EvaluationContract.
type evaluationContract struct {
	Name                         *string             `json:"name"`
	StartTime                    *string             `json:"startTime"`
	EndTime                      *string             `json:"endTime"`
	Policies                     []evaluation.Policy `json:"policies"`
	EnableOfflineExperimentation bool                `json:"enableOfflineExperimentation"`
}

// contractField is a 400 InvalidEvaluationContract naming a field.
func contractField(field, msg string) error {
	return &evaluation.Error{Kind: fault.Invalid, Code: "InvalidEvaluationContract", Field: field, Msg: msg}
}

// createEvaluation is Evaluations_Create: 201 with the evaluation and
// its Location.
func createEvaluation(r *http.Request, x *engine.Experiment, base string, v11 bool) (int, any, error) {
	var c evaluationContract
	if err := readJSON(r, &c); err != nil {
		if fault.Of(err) == fault.Invalid {
			err = contractField("body", err.Error())
		}
		return 0, nil, err
	}
	req := evaluation.Request{Policies: c.Policies, OfflineExperimentation: c.EnableOfflineExperimentation}
	if c.Name != nil {
		req.Name = *c.Name
	}
	for _, f := range []struct {
		name string
		v    *string
		to   *time.Time
	}{{"startTime", c.StartTime, &req.Start}, {"endTime", c.EndTime, &req.End}} {
		if f.v == nil {
			return 0, nil, contractField(f.name, "is required: an RFC 3339 date-time")
		}
		t, err := time.Parse(time.RFC3339Nano, *f.v)
		if err != nil {
			return 0, nil, contractField(f.name, "is not an RFC 3339 date-time: "+err.Error())
		}
		*f.to = t
	}
	if c.Policies == nil {
		return 0, nil, contractField("policies", "is required (an array of {name, arguments}; [] for the online, baseline and random policies alone)")
	}
	ev, err := evaluation.Create(r.Context(), x, rand.Text(), req)
	if err != nil {
		return 0, nil, err
	}
	return 201, Headed{Header: map[string]string{"Location": base + "/evaluations/" + ev.ID}, Body: evaluationOf(ev, v11)}, nil
}

// pzEvaluation is Personalizer's Evaluation (v1.1-preview.3's fields
// omitted in v1.0's answers), with package evaluation's own under
// "dpbandit".
type pzEvaluation struct {
	ID                string                `json:"id"`
	Name              string                `json:"name"`
	StartTime         string                `json:"startTime"`
	EndTime           string                `json:"endTime"`
	JobID             string                `json:"jobId"`
	Status            string                `json:"status"`
	PolicyResults     []policyResult        `json:"policyResults"`
	FeatureImportance [][]string            `json:"featureImportance"`
	EvaluationType    string                `json:"evaluationType,omitempty"`
	OptimalPolicy     *string               `json:"optimalPolicy,omitempty"`
	CreationTime      string                `json:"creationTime,omitempty"`
	Dpbandit          evaluation.Evaluation `json:"dpbandit"`
}

// policyResult is Personalizer's PolicyResult.
type policyResult struct {
	Name         string                `json:"name"`
	Arguments    string                `json:"arguments"`
	PolicySource string                `json:"policySource,omitempty"`
	Summary      []policyResultSummary `json:"summary"`
	TotalSummary policyResultSummary   `json:"totalSummary"`
}

// policyResultSummary is Personalizer's PolicyResultSummary, from a target's
// releases: sumOfSquares, a sum of the raw terms, is not released.
type policyResultSummary struct {
	TimeStamp                 string   `json:"timeStamp"`
	IPSEstimatorNumerator     float64  `json:"ipsEstimatorNumerator"`
	IPSEstimatorDenominator   float64  `json:"ipsEstimatorDenominator"`
	SNIPSEstimatorDenominator float64  `json:"snipsEstimatorDenominator"`
	AggregateTimeWindow       string   `json:"aggregateTimeWindow"`
	NonZeroProbability        float64  `json:"nonZeroProbability"`
	ConfidenceInterval        float64  `json:"confidenceInterval"`
	AverageReward             *float64 `json:"averageReward,omitempty"`
}

// evaluationOf is an evaluation in Personalizer's shape: each target's
// summary over the whole range (summary holds that one aggregate), from
// its releases: ipsEstimatorNumerator the released IPS times n,
// ipsEstimatorDenominator n, snipsEstimatorDenominator SNIPS's released
// mean weight times n, averageReward the released IPS,
// confidenceInterval the half-width of its 95% interval
// (evaluation.PolicyResult.CI95), nonZeroProbability the events whose
// logged action the target plays. optimalPolicy is the target of the
// largest released IPS.
func evaluationOf(ev evaluation.Evaluation, v11 bool) pzEvaluation {
	out := pzEvaluation{ID: ev.ID, Name: ev.Name, StartTime: stamp(ev.Start), EndTime: stamp(ev.End), JobID: ev.ID, Status: "completed",
		PolicyResults: []policyResult{}, FeatureImportance: [][]string{}, Dpbandit: ev}
	n := float64(ev.Events)
	window := formatSpan(ev.End.Sub(ev.Start).Seconds(), v11)
	best, bestIPS := "", 0.0
	for _, p := range ev.Policies {
		ips, snips := p.Releases[0], p.Releases[1]
		s := policyResultSummary{TimeStamp: stamp(ev.End), IPSEstimatorNumerator: ips.Value * n, IPSEstimatorDenominator: n,
			AggregateTimeWindow: window, NonZeroProbability: float64(p.NonZero), ConfidenceInterval: p.CI95}
		if len(snips.Released) == 2 {
			s.SNIPSEstimatorDenominator = snips.Released[1] * n
		}
		pr := policyResult{Name: p.Name, Arguments: p.Arguments, Summary: []policyResultSummary{s}, TotalSummary: s}
		if v11 {
			avg := ips.Value
			pr.Summary[0].AverageReward, pr.TotalSummary.AverageReward, pr.PolicySource = &avg, &avg, p.Source
		}
		if best == "" || ips.Value > bestIPS {
			best, bestIPS = p.Name, ips.Value
		}
		out.PolicyResults = append(out.PolicyResults, pr)
	}
	if v11 {
		out.EvaluationType, out.OptimalPolicy, out.CreationTime = "Manual", &best, stamp(ev.Created)
	}
	return out
}
