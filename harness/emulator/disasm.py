"""Instructions from the code object's text, through llvm-objdump-22 (upstream's gfx950 decoder)."""
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

INSTRUCTION = re.compile(r"^\s+(\S+)(.*?)\s*//\s*([0-9A-Fa-f]+):((?:\s+[0-9A-Fa-f]{8})+)")
SOURCE = re.compile(r"^; (.+:\d+)\s*$")
OBJDUMP_NAMES = ("llvm-objdump-22", "llvm-objdump")


@dataclass
class Instruction:
    pc: int
    size: int
    mnemonic: str
    operands: list[str]
    modifiers: dict[str, str]
    words: list[int]
    text: str
    source_line: str | None = None


@dataclass
class Program:
    instructions: list[Instruction]
    index_of: dict[int, int] = field(default_factory=dict)
    load_base: int = 0  # the host address of vaddr 0 (what s_getpc_b64 adds)

    def __post_init__(self):
        self.index_of = {ins.pc: i for i, ins in enumerate(self.instructions)}


def objdump_tool() -> str:
    for name in OBJDUMP_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("llvm-objdump-22 is not installed (make setup installs it)")


def disassemble(blob: bytes) -> Program:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "code.o")
        with open(path, "wb") as handle:
            handle.write(blob)
        command = [objdump_tool(), "-d", "--mcpu=gfx950", path]
        if b".debug_line" in blob:
            command.insert(2, "-l")
        text = subprocess.run(command, capture_output=True, text=True, check=True,
                              timeout=300).stdout
    return Program(parse_listing(text))


def parse_listing(text: str) -> list[Instruction]:
    instructions, source = [], None
    for line in text.splitlines():
        found = SOURCE.match(line)
        if found:
            source = found.group(1)
            continue
        found = INSTRUCTION.match(line)
        if found:
            instructions.append(parse_instruction(found, source))
    return instructions


def parse_instruction(found: re.Match, source: str | None) -> Instruction:
    mnemonic, rest, pc, words = found.groups()
    operands, modifiers = split_operands(rest.strip())
    words_list = [int(word, 16) for word in words.split()]
    return Instruction(int(pc, 16), 4 * len(words_list), mnemonic, operands, modifiers,
                       words_list, f"{mnemonic} {rest.strip()}".strip(), source)


def split_top(text: str, separator: str) -> list[str]:
    """Splits at separators outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:at])
            start = at + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def split_operands(rest: str) -> tuple[list[str], dict[str, str]]:
    """'v1, v2 offset:16 glc' -> (['v1', 'v2'], {'offset': '16', 'glc': ''})."""
    if not rest:
        return [], {}
    parts = split_top(rest, ",")
    tail = split_top(parts[-1], " ")
    operands = parts[:-1] + tail[:1]
    modifiers = {}
    for word in tail[1:]:
        key, _, value = word.partition(":")
        modifiers[key] = value
    if operands and is_modifier(operands[-1]) and len(parts) == 1:
        key, _, value = operands.pop().partition(":")
        modifiers[key] = value
    return operands, modifiers


def is_modifier(word: str) -> bool:
    return ":" in word and not word.startswith(("s[", "v[", "a[", "ttmp["))
