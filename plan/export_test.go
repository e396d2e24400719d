package plan

// Test-only lookups.

// TaskByID returns the first task with the given id, or nil.
func (p *Plan) TaskByID(id string) *Task {
	for i := range p.Tasks {
		if p.Tasks[i].ID == id {
			return &p.Tasks[i]
		}
	}
	return nil
}
