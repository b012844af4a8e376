package pki

import "strings"

// gossipKeyProblems maps what memberlist says when gossip fails for want
// of the right key to what it means for a netmgr member.
var gossipKeyProblems = []struct{ says, means string }{
	{"no installed keys could decrypt", "the peer encrypts gossip with a key that is not in this member's keyring"},
	{"encryption is configured but remote state is not encrypted", "the peer sends gossip in the clear (it has no gossip keyring) and this member requires encryption"},
	{"remote state is encrypted and encryption is not configured", "the peer encrypts gossip and this member has no gossip keyring"},
	{"unsupported encryption version", "the peer sent a packet not encrypted with a gossip key (it has no gossip keyring, or not ours)"},
	{"payload is too small to decrypt", "the peer sent a packet not encrypted with a gossip key (it has no gossip keyring, or not ours)"},
}

// GossipKeyHint says what to do about a gossip key problem.
const GossipKeyHint = "every member's gossip keyring must hold the key the others encrypt with (the first of their files); " +
	"see netmgr tls gossip-key --help"

// GossipKeyProblem reports whether text (a memberlist log line or join
// error) says that gossip failed for want of the right key, and what
// that means.
func GossipKeyProblem(text string) (means string, ok bool) {
	lower := strings.ToLower(text)
	for _, p := range gossipKeyProblems {
		if strings.Contains(lower, p.says) {
			return p.means, true
		}
	}
	return "", false
}

// GossipPeer returns the peer address memberlist names in a log line or
// join error ("from=HOST:PORT", "failed to join HOST:PORT: ..."), or "".
func GossipPeer(line string) string {
	for _, mark := range []string{"from=", "failed to join "} {
		_, rest, ok := strings.Cut(line, mark)
		if !ok {
			continue
		}
		if i := strings.IndexAny(rest, " \t\n"); i >= 0 {
			rest = rest[:i]
		}
		return strings.TrimSuffix(rest, ":")
	}
	return ""
}
