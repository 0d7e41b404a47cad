// Package clock is wacpd's single source of time and identity: strictly
// monotonic timestamps and monotonic ULIDs.
//
// # Model
//
// WACP (Clock spec) requires runtime-assigned timestamps that are strictly
// monotonic per workspace and durable across restarts: the next timestamp is
// greater than the last one in the trail. wacpd keeps one clock for the whole
// run, so timestamps are strictly monotonic globally, which implies the
// per-workspace rule. Next returns max(now, last+1ns). At start the runtime
// calls Observe with the last timestamp found in the trail.
//
// # Format
//
// Timestamps are RFC 3339 UTC with exactly nine fractional digits
// ("2026-11-21T22:48:25.123456789Z", see Layout). The fixed width makes the
// strings sort in time order, so records store them as strings.
//
// IDs are ULIDs (Crockford base32, 26 characters). IDs made by one IDs value
// increase strictly, also across restarts once Observe has been called with
// the last ID issued.
//
// # Caveats
//
// The resolution is one nanosecond; under a burst the clock runs ahead of the
// wall clock by at most one nanosecond per call. Callers must not derive any
// relationship from an ID (WACP Identity rule 2).
package clock
