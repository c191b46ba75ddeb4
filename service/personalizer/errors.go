package personalizer

import (
	"errors"
	"net/http"
)

// ErrorResponse is Personalizer's ErrorResponse, the shape of every
// error the surface answers (its SDKs parse it).
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is an ErrorResponse's error: its code and message.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// codes names the statuses in Personalizer's error codes (its
// specification's ErrorCode: BadRequest, ResourceNotFound,
// InternalServerError; the others are HTTP's reason phrases).
var codes = map[int]string{
	400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "ResourceNotFound", 409: "Conflict",
	410: "ResourceNotFound", 413: "BadRequest", 415: "BadRequest", 500: "InternalServerError", 503: "ServiceUnavailable",
}

// Coded is an error answered with a code of its own (the evaluations'
// InvalidEvaluationContract, EvaluationNotFound, ...) instead of its
// status's name; its status is its kind's, as for any other error.
type Coded struct {
	Code string
	Err  error
}

func (e *Coded) Error() string { return e.Err.Error() }

// Unwrap returns the error that has the kind.
func (e *Coded) Unwrap() error { return e.Err }

// ErrorFor is the ErrorResponse of err answered with status: a Coded
// error's code, else ErrorOf's.
func ErrorFor(status int, err error) ErrorResponse {
	var c *Coded
	if errors.As(err, &c) {
		return ErrorResponse{ErrorBody{c.Code, err.Error()}}
	}
	return ErrorOf(status, err.Error())
}

// ErrorOf is the ErrorResponse for a status: its code names the status
// (Personalizer's name, else HTTP's reason phrase).
func ErrorOf(status int, msg string) ErrorResponse {
	name := codes[status]
	if name == "" {
		name = http.StatusText(status)
	}
	return ErrorResponse{ErrorBody{name, msg}}
}
