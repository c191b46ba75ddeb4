package define

// DecodePz reads a Personalizer request body raw (what names it in the
// errors) into v as ASP.NET Core's default readers would, which
// Personalizer's clients were written against: a field name binds in
// any case and the last of a repeated name counts (encoding/json's
// reading too); unlike them, an unknown field and data after the object
// are errors (fault.Invalid). The rank and multi-slot rank requests are
// read so (decodeStrict), and the API's other Personalizer bodies
// through this; the native /v1 bodies are read exactly.
// docs/personalizer.md, field names.
func DecodePz(raw []byte, v any, what string) error { return decodeStrict(raw, v, what) }
