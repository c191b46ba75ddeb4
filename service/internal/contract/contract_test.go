package contract

import "testing"

func TestDocumentLoads(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(s.Patterns())
}
