//go:build !unix

package journal

// checkPrivate has no portable meaning outside unix file modes; Windows ACLs of the user's profile
// directory keep journals private there.
func checkPrivate(path string, dir bool) error { return nil }
