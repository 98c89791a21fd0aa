"""How an emulated run stops: an instruction we lack, or a defect the checkers saw."""


class NotEmulated(Exception):
    """The kernel reached an instruction (or an operand form) the emulator does not execute."""

    def __init__(self, mnemonic: str, kernel: str = "?", detail: str = ""):
        self.mnemonic = mnemonic
        self.kernel = kernel
        self.detail = detail
        super().__init__(f"not emulated: {mnemonic} in {kernel}")

    def in_kernel(self, kernel: str) -> "NotEmulated":
        return NotEmulated(self.mnemonic, kernel, self.detail)


class EmulationFault(Exception):
    """A defect found while executing: 'lds race', 'out of bounds', 'hang', 'trap' ..."""

    def __init__(self, kind: str, message: str, kernel: str = "?", mnemonic: str = "?",
                 offset: str = "?", source_line: str | None = None):
        self.kind = kind
        self.message = message
        self.kernel = kernel
        self.mnemonic = mnemonic
        self.offset = offset
        self.source_line = source_line
        super().__init__(self.describe())

    def describe(self) -> str:
        where = f" ({self.source_line})" if self.source_line else ""
        return (f"{self.kind}: {self.message} - {self.mnemonic} at {self.offset}"
                f" in {self.kernel}{where}")

    def located(self, kernel: str, mnemonic: str, offset: str,
                source_line: str | None) -> "EmulationFault":
        self.kernel, self.mnemonic, self.offset = kernel, mnemonic, offset
        self.source_line = source_line
        self.args = (self.describe(),)
        return self
