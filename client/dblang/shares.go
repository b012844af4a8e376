package dblang

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
)

// Fair share's declarations:
//
//	account physics = {share=10, users={alice, bob}}
//	share alice = 2
//	fairshare_halflife = 7d
//
// An account groups users whose usage is charged together; a user is in
// at most one account, and a user in none is in the account "default"
// (which an account declaration may also name, to give it a share). A
// share is a whole number from 1; an account's and a user's default is
// 1. fairshare_halflife is how fast past usage is forgotten: a whole
// number with a unit s, m, h or d (a bare number is days), from a minute
// to ten years.

// halfLifeUnits are the units fairshare_halflife may carry, in seconds.
var halfLifeUnits = map[byte]int64{'s': 1, 'm': 60, 'h': 3600, 'd': 86400}

const (
	minHalfLife = 60
	maxHalfLife = 10 * 365 * 86400
)

// account checks an account declaration.
func (c *checker) account(d decl) {
	owner := "account " + d.name.text
	if d.val.kind != vList {
		c.errs.add(d.val.pos, "%s wants a {share=N, users={USER, ...}} list, found %s", owner, d.val.describe())
		return
	}
	a := Account{Name: d.name.text, Pos: d.pos}
	for _, it := range d.val.items {
		switch {
		case it.name.kind == vWord && it.name.text == "share" && it.assign:
			n, msg := parseInt(it.val, "share in "+owner)
			if msg == "" && n < 1 {
				msg = "share=" + it.val.text + " in " + owner + " must be 1 or more"
			}
			if msg != "" {
				c.errs.add(it.val.pos, "%s", msg)
				continue
			}
			a.Share = n
		case it.name.kind == vWord && it.name.text == "users" && it.assign && it.val.kind == vList:
			for _, u := range it.val.items {
				if u.assign || (u.name.kind != vWord && u.name.kind != vString) || u.name.text == "" {
					c.errs.add(u.name.pos, "users in %s wants logins, found %s", owner, u.name.describe())
					continue
				}
				if other, ok := c.member[u.name.text]; ok {
					c.errs.add(u.name.pos, "user %s is already in account %s; a user is in at most one account", u.name.text, other)
					continue
				}
				c.member[u.name.text] = a.Name
				a.Users = append(a.Users, u.name.text)
			}
		default:
			c.errs.add(it.name.pos, "unknown item %s in %s; write {share=N, users={USER, ...}}", it.name.describe(), owner)
		}
	}
	c.db.Accounts = append(c.db.Accounts, a)
}

// share checks a `share USER = N` declaration.
func (c *checker) share(d decl) {
	n, msg := parseInt(d.val, "share "+d.name.text)
	if msg == "" && n < 1 {
		msg = "share " + d.name.text + " = " + d.val.text + " must be 1 or more"
	}
	if msg != "" {
		c.errs.add(d.val.pos, "%s", msg)
		return
	}
	c.db.Shares = append(c.db.Shares, Share{User: d.name.text, Share: n, Pos: d.pos})
}

// halfLife checks `fairshare_halflife = DURATION`.
func (c *checker) halfLife(d decl) {
	v := d.val
	unit, text := int64(86400), v.text
	if v.kind == vWord && len(text) > 1 {
		if u, ok := halfLifeUnits[text[len(text)-1]]; ok {
			unit, text = u, text[:len(text)-1]
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if v.kind != vWord || err != nil || n < 1 || n > maxHalfLife/unit || n*unit < minHalfLife {
		c.errs.add(v.pos, "bad fairshare_halflife %s; write a whole number with a unit s, m, h or d, from 1m to 3650d, such as 7d", v.describe())
		return
	}
	c.db.HalfLifeSeconds = n * unit
}

// formatHalfLife prints seconds with the largest unit that divides them.
func formatHalfLife(secs int64) string {
	for _, u := range []struct {
		c byte
		n int64
	}{{'d', 86400}, {'h', 3600}, {'m', 60}} {
		if secs%u.n == 0 {
			return strconv.FormatInt(secs/u.n, 10) + string(u.c)
		}
	}
	return strconv.FormatInt(secs, 10) + "s"
}

// formatShares prints the accounts, shares and half-life, each a section.
func formatShares(b *bytes.Buffer, db *Database, section func(int)) {
	section(len(db.Accounts))
	for _, a := range db.Accounts {
		var items []string
		if a.Share != 0 {
			items = append(items, "share="+strconv.FormatInt(a.Share, 10))
		}
		users := make([]string, len(a.Users))
		for i, u := range a.Users {
			users[i] = formatWord(u)
		}
		items = append(items, "users={"+strings.Join(users, ", ")+"}")
		b.WriteString(declAccount + " " + a.Name + " = {" + strings.Join(items, ", ") + "}\n")
	}
	section(len(db.Shares))
	for _, s := range db.Shares {
		b.WriteString(declShare + " " + s.User + " = " + strconv.FormatInt(s.Share, 10) + "\n")
	}
	if db.HalfLifeSeconds != 0 {
		section(1)
		b.WriteString(declHalf + " = " + formatHalfLife(db.HalfLifeSeconds) + "\n")
	}
}

// sharesEqual compares the fair-share declarations.
func sharesEqual(db, o *Database) bool {
	if db.HalfLifeSeconds != o.HalfLifeSeconds || len(db.Accounts) != len(o.Accounts) || len(db.Shares) != len(o.Shares) {
		return false
	}
	for i, a := range db.Accounts {
		b := o.Accounts[i]
		if a.Name != b.Name || a.Share != b.Share || !slices.Equal(a.Users, b.Users) {
			return false
		}
	}
	for i, s := range db.Shares {
		if s.User != o.Shares[i].User || s.Share != o.Shares[i].Share {
			return false
		}
	}
	return true
}
