package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
)

// Role is what a certificate lets its holder do.
type Role string

// The roles a certificate can carry.
const (
	// RoleServer is a member of the server group: it joins Raft and may
	// start and signal jobs on stubs.
	RoleServer Role = "server"
	// RoleStub is the stub of the machine its certificate names: it may
	// report that machine's jobs and renew its lease, and vouch for the
	// users of its machine.
	RoleStub Role = "stub"
	// RoleClient acts as the user its certificate names.
	RoleClient Role = "client"
)

// organization is the subject organization of every netmgr certificate.
const organization = "netmgr"

// Roles lists every role, in the order help texts show them.
var Roles = []Role{RoleServer, RoleStub, RoleClient}

// ErrNoIdentity means a certificate is not a netmgr certificate: it
// carries no role or no name.
var ErrNoIdentity = errors.New("not a netmgr certificate")

// ErrWrongRole means a peer's certificate has a role the link does not
// accept.
var ErrWrongRole = errors.New("wrong certificate role")

// Identity is what a verified certificate says about its holder.
type Identity struct {
	Role Role
	// Name is the server's name, the stub's machine, or the client's user.
	Name string
}

// String renders the identity as "role NAME".
func (id Identity) String() string { return string(id.Role) + " " + id.Name }

// ParseRole turns "server", "stub" or "client" into a Role.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !slices.Contains(Roles, r) {
		return "", fmt.Errorf("role %q: %w: want server, stub or client", s, ErrNoIdentity)
	}
	return r, nil
}

// IdentityOf reads the role and name a certificate carries. It does not
// verify the certificate; callers do that first.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	sub := cert.Subject
	if !slices.Contains(sub.Organization, organization) || len(sub.OrganizationalUnit) != 1 || sub.CommonName == "" {
		return Identity{}, fmt.Errorf("certificate %q: %w (want O=%s, one OU naming the role, and a CN)", sub.String(), ErrNoIdentity, organization)
	}
	role, err := ParseRole(sub.OrganizationalUnit[0])
	if err != nil {
		return Identity{}, fmt.Errorf("certificate %q: %w", sub.String(), err)
	}
	return Identity{Role: role, Name: sub.CommonName}, nil
}

// checkRole returns an error unless id's role is one of want (any role
// when want is empty).
func checkRole(id Identity, want []Role) error {
	if len(want) == 0 || slices.Contains(want, id.Role) {
		return nil
	}
	return fmt.Errorf("peer is %s: %w: this link takes %v", id, ErrWrongRole, want)
}
