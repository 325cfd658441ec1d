package guard

import (
	"fmt"

	"github.com/unprune/unprune/internal/plan"
)

// Command names guard changes in reports and journals; the verb (protect, confirm) is the strategy.
const Command = "guard"

// PlanFor is the planner of a guard change by its verb: ProtectPlan or ConfirmPlan.
func PlanFor(verb string) (func(plan.Target) plan.Plan, error) {
	switch verb {
	case "protect":
		return ProtectPlan, nil
	case "confirm":
		return ConfirmPlan, nil
	}
	return nil, fmt.Errorf("guard %q: use protect or confirm", verb)
}
