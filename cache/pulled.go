package cache

import (
	"database/sql"
	"fmt"
	"time"
)

// Pulled is how a run came into the journal through a pull: from which
// remote, in which records commit, and what git's own verification of
// that commit's signature said. A run without one was made on this
// machine. The journal only keeps these facts; package travel decides
// what they are worth (travel.TrustOf).
type Pulled struct {
	RunID  string
	Remote string // the remote as the pull was given it (a name or a URL)
	Commit string // the records commit the rows were read from
	// Author is the records commit's author, "Name <email>": who made and
	// pushed the run as their git said, which nothing checks.
	Author string
	// Signature is git's verdict on the commit's signature (the letters
	// of `git log --format=%G?`): G good and allowed, B bad, U good but
	// not an allowed signer (or of unknown validity), X/Y expired, R
	// revoked key, E cannot be checked, N none.
	Signature string
	Signer    string // who signed, as git names them (%GS), when known
	Key       string // the signing key's fingerprint (%GF, else %GK)
	At        time.Time
}

// PutPulled records how a run was pulled (replacing what was recorded).
func (j *Journal) PutPulled(p Pulled) error {
	if p.At.IsZero() {
		p.At = time.Now()
	}
	if p.Signature == "" {
		p.Signature = "N"
	}
	_, err := j.exec(true, `INSERT INTO pulled (run_id, remote, commit_id, author, signature, signer, key, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id) DO UPDATE SET remote = excluded.remote, commit_id = excluded.commit_id,
			author = excluded.author, signature = excluded.signature, signer = excluded.signer,
			key = excluded.key, at = excluded.at`,
		p.RunID, p.Remote, p.Commit, p.Author, p.Signature, p.Signer, p.Key, ms(p.At))
	if err != nil {
		return fmt.Errorf("pulled %s: %w", p.RunID, err)
	}
	return nil
}

const pulledCols = `run_id, remote, commit_id, author, signature, signer, key, at`

func scanPulled(sc scanner) (Pulled, error) {
	var p Pulled
	var at sql.NullInt64
	err := sc.Scan(&p.RunID, &p.Remote, &p.Commit, &p.Author, &p.Signature, &p.Signer, &p.Key, &at)
	p.At = fromMS(at)
	return p, err
}

// GetPulled is how run runID was pulled; ok false when it was made here.
func (j *Journal) GetPulled(runID string) (*Pulled, bool, error) {
	ps, err := queryAll(j, `SELECT `+pulledCols+` FROM pulled WHERE run_id = ?`, []any{runID}, scanPulled)
	if err != nil {
		return nil, false, fmt.Errorf("pulled %s: %w", runID, err)
	}
	if len(ps) == 0 {
		return nil, false, nil
	}
	return &ps[0], true, nil
}

// PulledRuns is every pulled run's row, by run id.
func (j *Journal) PulledRuns() (map[string]Pulled, error) {
	ps, err := queryAll(j, `SELECT `+pulledCols+` FROM pulled`, nil, scanPulled)
	if err != nil {
		return nil, fmt.Errorf("pulled runs: %w", err)
	}
	out := make(map[string]Pulled, len(ps))
	for _, p := range ps {
		out[p.RunID] = p
	}
	return out, nil
}
