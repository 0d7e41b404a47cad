package trail

// VerifyResult is the verdict of a verification of a trail (the reply of
// audit.trail.verify): OK, or the first violation.
type VerifyResult struct {
	OK        bool      `json:"ok"`
	Entries   uint64    `json:"entries"`
	FirstBad  string    `json:"first_bad,omitempty"`
	Violation Violation `json:"violation,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}
