package runtime

// DocSubjects exports docSubjects to the runtime_test package, whose
// TestAuthzDocCoversEveryEndpoint checks the authorization table against it.
var DocSubjects = docSubjects
