// Package taxonomy holds the WACP protocol's vocabulary and its extension
// registry: the protocol version, the base roles and their permissions, the
// base envelope and checkpoint types, the closed set of signal types, and the
// validator of a taxonomy document (TAXONOMY.md), which it reduces to O(1)
// lookup tables. Package taxfile reads taxonomy files (YAML or JSON) into
// it; this package decodes only JSON (the base document) and links no YAML,
// so a client that needs the names links no file parser.
//
// It is a leaf: it imports only the standard library and
// github.com/zeebo/blake3.
//
// # Model
//
// A Taxonomy answers five questions for the runtime: is this role, envelope
// type or checkpoint type registered (HasRole, HasEnvelopeType,
// HasCheckpointType); may this role send this envelope type to that role
// (CanSend); may it create this checkpoint type (CanCreateCheckpoint); may it
// emit this signal (CanEmit). Base() is the taxonomy with nothing registered;
// a loaded file only adds to it (TAXONOMY §1 "the taxonomy extends; it does
// not replace"). A Taxonomy is immutable and safe for concurrent use.
//
// Base permissions (Roles spec §3, §6):
//
//	role         sends                          emits                                                         creates
//	coordinator  directive, feedback → worker   ready started failed integrate acknowledged                   —
//	worker       query → coordinator            ready started blocked checkpoint complete failed escalation   artifact
//	observer     —                              ready started complete failed escalation                      observation
//
// The base permission matrix is exactly the three rows (coordinator,
// directive, worker), (coordinator, feedback, worker), (worker, query,
// coordinator). suspend and migrate are emitted by no role; the runtime emits
// them.
//
// # File format
//
// A taxonomy file is YAML or JSON: taxfile.Load reads *.yaml and *.yml as YAML, *.json
// as JSON, and tries anything else as JSON, then YAML. It holds one document,
// either wrapped ("taxonomy: {...}") or with the fields at the top level:
//
//	taxonomy:
//	  id: example                 # required unless the file is empty
//	  version: 1.0.0              # required unless the file is empty
//	  protocol_version: "0.1"     # required unless the file is empty; must be ProtocolVersion
//	  roles:                      # a list of {name, ...} or a mapping keyed by name
//	    reviewer:
//	      extends: worker         # worker | observer
//	      add:    [...]           # capabilities
//	      remove: [...]           # capabilities
//	      override: {checkpoint_types: [review]}
//	  envelope_types:             # list or mapping; entries {name, description, permissions}
//	    - name: report
//	      permissions: [{sender_role: reviewer, receiver_role: coordinator}]
//	  checkpoint_types:           # list or mapping; entries {name, description, permitted_roles, required_fields}
//	    - {name: review, permitted_roles: [reviewer], required_fields: [verdict]}
//
// A capability is a string "action: target", a one-key mapping {action:
// target} (which is how YAML reads the spec's unquoted "- send: report →
// coordinator"), or a mapping {action: ..., target: ...}. Actions are
// send and receive (target "<envelope_type> → <role>", "->" accepted for the
// arrow; receive is informational, as receive rights are inbox-level), read
// (target a scope such as assigned_workspace), create (target a checkpoint
// type) and emit (target a signal type; allowed in add only for a signal the
// base role already emits, so it never changes anything).
//
// A file that declares nothing (no bytes, only comments, null, {}, or an
// empty taxonomy: wrapper) is the empty taxonomy: it is valid, gets ID BaseID
// and Version BaseVersion, and behaves as Base(). Any other file must declare
// id, version and protocol_version. Mapping keys are matched exactly; YAML
// merge keys (<<) are not supported. Scalars that YAML reads as numbers (0.1)
// are accepted where a string is expected, booleans are not.
//
// Checksum is "blake3:" and the hex BLAKE3-256 of the file bytes as loaded;
// Base().Checksum() hashes BaseDocument.
//
// # Resolution
//
// A derived role's permissions are computed once, at load, in this fixed
// order (Roles spec §5, TAXONOMY §3):
//
//  1. Start from the base role: its create set and every matrix row whose
//     sender is the base role or the derived role itself.
//  2. If override.checkpoint_types is present, it replaces the create set.
//  3. Apply remove: "create: X" drops X, "send: T → R" drops the row (T, R),
//     "read: S" drops S.
//  4. Apply add, the same way but granting. Add wins over remove.
//  5. Add every custom checkpoint type whose permitted_roles names the role
//     itself (a type that names only the base role is not inherited).
//
// The matrix rows are the base rows, every permissions row of the taxonomy's
// envelope types, and each derived role's "send: T → R" added as (role, T,
// R). CanSend(X, T, Y) holds when T is registered and X's resolved set holds
// (T, Y) or (T, BaseOf(Y)): a row naming a base role as receiver admits its
// derived roles, not the other way round. Delegation rows are not part of
// this matrix. A derived role emits exactly its base role's signals. The
// coordinator creates no checkpoints.
//
// # Validation
//
// Validation is all-or-nothing: FromNode (and so taxfile.Parse and
// taxfile.Load) returns either a Taxonomy or a
// *ValidationError naming the file, the entry and the rule, never both. The
// checks run in a fixed order (document shape; protocol_version, id, version;
// names of roles, envelope types, checkpoint types; then each role, envelope
// type and checkpoint type in file order) and the first failure is returned.
// The rules, by their ValidationError.Rule identifier:
//
//	syntax                       not one well-formed YAML/JSON document, or nested too deep (64) or too large (200,000 nodes after alias expansion)
//	field_type                   a field has the wrong shape (a string where a list belongs, …)
//	duplicate_key                a mapping repeats a key (in a map-style registry this is name_unique instead)
//	unknown_field                a key not in the format above
//	signal_not_extensible        a signal_types or signals key anywhere, or "emit:" naming a non-signal (TAXONOMY §6 rule 3)
//	protocol_version             protocol_version missing from a non-empty file, or not equal to ProtocolVersion
//	required_field               id, version, an entry's name, or a permission row's role missing
//	name_syntax                  a name that is empty, over 128 bytes, or holds white space, control characters, ':' or an arrow
//	name_mismatch                a map-style entry's name field differs from its key
//	name_unique                  two entries of one registry share a name
//	name_collides_base           a role named coordinator|worker|observer, an envelope type directive|feedback|query, a checkpoint type artifact|observation
//	extends_base                 extends is not worker or observer (a derived role, coordinator, or missing)
//	capability_syntax            a capability that does not parse, or names an unknown action
//	no_privilege_escalation      add names a coordinator-level action (see below) as action or target, sends directive or feedback, or emits a signal the base role does not
//	emit_not_removable           remove names an "emit:" capability
//	cross_registry               a capability or override.checkpoint_types names an envelope or checkpoint type that is neither base nor registered (TAXONOMY §6 rule 2)
//	role_reference               a capability, permissions row or permitted_roles names a role that is neither base nor registered
//	permissions_nonempty         an envelope type with no permissions row
//	permitted_roles_nonempty     a checkpoint type with no permitted role
//	coordinator_creates_nothing  a checkpoint type permits the coordinator
//	required_fields              a required_fields entry that is blank or repeated
//
// Coordinator-level actions are create_workspace, abort_workspace,
// assign_role(s), delegate, grant_delegate, grant_delegation,
// perform_integration, manage_budget(s), grant_visibility and
// configure_highway, matched ignoring case and treating '-', '.' and spaces
// as '_'.
//
// # Caveats
//
// Names are opaque (TAXONOMY §6 rule 4): the same name may appear in
// different registries. Roles, EnvelopeTypes, CheckpointTypes, RequiredFields
// and ReadScopes return copies. A *ValidationError reports only the first
// failure.
package taxonomy
