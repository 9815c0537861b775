package storage

// raceLost is the type of the sentinels that mean the operation lost a race
// with a concurrent writer ([ErrConflict], [ErrDuplicate]): the same request,
// sent again, is decided afresh against what the winner wrote.
type raceLost struct{ msg string }

func (e *raceLost) Error() string { return e.msg }

// Conflict reports true. apierror maps an error whose chain holds an error
// with this method to 409 CONFLICT (retry) rather than 500: see
// apierror.From.
func (e *raceLost) Conflict() bool { return true }
