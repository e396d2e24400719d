// Package identity decides whether two agent invocations are the same: it is
// the one function behind implloop's journal, its resume, `implloop explain`
// and `implloop id`. Every call implloop makes to an agent is described by a
// [Preimage]; its [Digest] is the call's identity. A journaled call whose
// identity equals a new call's identity may stand in for it (it is replayed
// instead of run); any other call runs live.
//
// The goal is "never stale, rarely redundant": every input that changes what
// the agent is asked must change the identity, and only true volatility
// (machine paths, timestamps, generated ids) may be ignored.
//
// # The digest
//
//	Digest(p) = "u1:" + hex(sha256("implloop.unit\x00v1\x00" + Canonical(p)))
//
// [Canonical] is the RFC 8785 (JSON Canonicalization Scheme) form of the
// preimage, computed with github.com/gowebpki/jcs: object keys sorted, no
// insignificant whitespace, one spelling for every string and number. The
// journal stores these canonical bytes next to the identity, so that
// [DigestCanonical] can re-check a stored preimage and [Diff] can say which
// field changed between a journaled call and a new one ("task text
// changed", "model: "a" -> "b"", "new attempt").
//
// # What is hashed
//
// The preimage holds, in this order of importance: the version, the role,
// the agent backend's name, the model, the sha256 of the role's
// instructions (template bytes), the task's id and normalized text, the
// sha256 of the normalized preamble, the plan's sha256 for units whose
// prompt reads the plan, a free prompt (for `implloop id`), the attempt
// number, the gate feedback handed to a retry, the sorted hashes of declared
// dependencies' artifacts, the timeout, the sorted NAMES of passed-through
// environment variables, and user params. docs/identity.md renders that
// table ([Markdown]) with the reason for each row.
//
// Optional keys are absent from the canonical JSON when unset, never null or
// empty, so adding an optional field keeps every existing digest. Lists
// whose order means nothing (artifacts, env names) are sorted and
// de-duplicated by Canonical, so callers cannot get them "wrong".
//
// # What is not hashed, and why
//
// Environment variable values are never hashed: a digest of a secret is a
// durable oracle (anyone with the journal can confirm a guess), and every
// key rotation would invalidate every journaled call. Only names are hashed;
// Canonical rejects a NAME=VALUE entry. Also left out: the retry budget and
// the on-blocked policy (they change what happens between calls, not what a
// call asks), the agent CLI's version (recorded, not hashed, or every agent
// update would re-run everything), the run id, timestamps, and the absolute
// project path. docs/identity.md has that table too.
//
// # Normalization
//
// Free text (task text, the preamble, gate feedback, a free prompt) is
// hashed after [Normalize], which applies one ordered table of rules
// (rendered in docs/identity.md): line endings, trailing whitespace and blank lines, the project
// root to <PROJECT>, the home directory to <HOME>, temp directories to
// <TMP>, date-times to <TIME>, UUIDs and run ids to numbered tokens (<UUID-1>,
// <RUN-1>; equal values get equal numbers, so "the same id twice" and "two
// different ids" stay different), and task-list markers' state ([x] to [ ]).
// Bare hex tokens (they are usually hashes), date-only strings, numbers,
// whitespace inside a line and Unicode (no NFC) are kept on purpose. The
// normalized text is for the identity only: the agent always receives the
// byte-exact text.
//
// An [Env] names the paths to replace; [EnvFor] builds it for a project
// directory on this machine, with symlink-resolved forms. Normalize is
// idempotent: Normalize(Normalize(x, e), e) == Normalize(x, e).
//
// # Run ids
//
// A run id is "r-" + the UTC start time as YYYYMMDD-HHMMSS + "-" + four hex
// digits of randomness, e.g. r-20261130-054012-3f9a ([NewRunID],
// [RunIDRegexp]). The run-id rule numbers them out of hashed text.
//
// # The version promise
//
// [Version] ("1") is inside the preimage, the domain separator and the
// digest's prefix. Changing a normalization rule (its order, what it
// matches, what it produces) or the scope (adding, removing or redefining a
// hashed field) bumps it, so a changed scheme never silently reuses
// identities computed under the old one. The single exception is a new
// optional key that is absent when unset, whose absence means exactly what
// the old scheme meant: every existing preimage stays byte-identical.
// Golden vectors in testdata/identity pin the canonical bytes and digests of
// ten preimages, and a test pins a fingerprint of both tables to the
// version, so an accidental change fails loudly.
//
// The rules table and the scope table are rendered to docs/identity.md by
// `go generate ./identity`; a test fails when that file is stale.
package identity

//go:generate go run ./gen -o ../docs/identity.md
