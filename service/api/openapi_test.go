package api

import (
	"bytes"
	"os"
	"testing"
)

// TestOpenAPIDocsCopy: docs/openapi.json is the document the service
// serves.
func TestOpenAPIDocsCopy(t *testing.T) {
	docs, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, openAPI) {
		t.Error("docs/openapi.json differs from service/api/openapi.json: cp service/api/openapi.json docs/openapi.json")
	}
}
