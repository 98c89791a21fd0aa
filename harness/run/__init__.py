"""Running a submission: the parent's session and protocol, the worker handle, and the child process's modules."""
