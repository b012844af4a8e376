package client

// ShareReport is GET /v1/share, `netmgr share`: every fair-share account
// with its users, as sshare shows them.
type ShareReport struct {
	// On says whether fair share is on: every server applies it and the
	// leader has committed its start, so attempt ends are charged.
	On bool `json:"on"`
	// HalfLifeSeconds is the half-life past usage decays with.
	HalfLifeSeconds int64 `json:"halflife_seconds"`
	// Rows lists each account (User "") followed by its users, accounts
	// and users by name.
	Rows []ShareRow `json:"rows"`
}

// ShareRow is one account or one user of an account.
type ShareRow struct {
	Account string `json:"account"`
	// User is "" on the account's own row.
	User string `json:"user,omitempty"`
	// Share is the declared share (1 when not declared): an account's
	// among accounts, a user's within its account.
	Share int64 `json:"share"`
	// Usage is the decayed usage in slot-seconds (one instance running
	// one second is one), decayed to now.
	Usage float64 `json:"usage"`
	// Factor is the fair-share factor 2^(-usage/share), both as fractions
	// of their totals (an account's among accounts, a user's within its
	// account): 1 for no usage, lower for more. Work is ordered by the
	// account's, then the user's.
	Factor float64 `json:"factor"`
	// Running and Waiting count placed, running or suspended instances
	// and queued ones, over every queue.
	Running int `json:"running"`
	Waiting int `json:"waiting"`
}
