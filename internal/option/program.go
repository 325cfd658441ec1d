package option

import "context"

type programKey struct{}

// WithProgram says how the user runs unprune — "unprune", or "kubectl unprune" and "argocd
// unprune" for the plugins — so that the command lines messages recommend can be run as printed: a
// kubectl plugin installed with krew has no unprune binary on the PATH.
func WithProgram(ctx context.Context, program string) context.Context {
	return context.WithValue(ctx, programKey{}, program)
}

// Program is how the user runs unprune, as WithProgram said; the standalone binary otherwise (the
// documentation's spelling, and what a watch's Events name).
func Program(ctx context.Context) string {
	if p, ok := ctx.Value(programKey{}).(string); ok && p != "" {
		return p
	}
	return program
}

// In renders the command line as the user runs unprune in ctx.
func (c Command) In(ctx context.Context) string {
	return c.render(Program(ctx))
}
