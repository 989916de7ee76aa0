"""Many days: the scenarios (the seed benchmark, a stack's models), the oracle bound, the tuner, and the blocks
they write for the stack file."""
