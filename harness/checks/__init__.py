"""Static checks on a submission's text: the server's rules, KernelGuard's rules, HIP hazards, the aiter API."""
