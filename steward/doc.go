// Package steward enforces an atlas steward's checkpoints (seeds 000 and
// 001, issue 17): points where the authority injects context and
// guidance, asks the agent questions it must answer before it proceeds,
// unlocks or locks capabilities and records to TRACE.
//
// It is a pure core. Compile turns the loaded atlases into a Set of
// checkpoint definitions in evaluation order (priority, highest first,
// stable). A Session is one CARP session's checkpoint state; Evaluate
// applies an Event (the session's start and end, a resolve, an execute,
// an execution admitted or finished) to it and returns the TRACE steps;
// Respond checks the agent's answers to a pending checkpoint; Gate, Deny
// and Prompts are what the resolver and execute enforce. The engine
// (package runtime) persists the Session and emits the steps in the
// commit of the operation.
package steward
