#!/usr/bin/env python3
"""The TMA flash kernel's softmax overlaps P V in the machine code, not only in the source.

ptxas moves a wgmma.wait_group up to the top of its basic block: until 2026-12-03 the wait for
P V of the previous tile sat above every exponential of the softmax, so the softmax never ran
beside the group's own P V, although the source said it did (docs/attention.md). wgmma_wait_after
(kernels/wgmma.cuh) keeps it below. This test reads the sm_90a cubin that nvcc embeds in
flash_tma.cu's object file and checks, for each flash_tma_kernel, that the loop's wait for zero
pending wgmma groups comes after at least KEYS / 2 MUFU instructions (a thread's exponentials of
a KEYS-key tile) counted from the loop's wait for one pending group (S of the tile).
flash_wgmma.cu's dense loop (the path without tensor maps) has the same hoisted wait and is not
checked: pinning its wait below the softmax, with the stale max, made it no faster (H200,
2026-12-04, four alternated rounds: 0-1.5 % slower on average).

No disassembler is needed (CI's toolkit has none): instructions are 16 bytes, and the opcode
classes read here are those of CUDA 13.0's sm_90a SASS as cuobjdump prints them (checked against
docs/results/h200-2026-12-03-session21/dense-loop-before.sass): the low 12 bits 0x308 are
MUFU, 0x9c5 WARPGROUP.ARRIVE / DEPBAR (bit 47 set for DEPBAR.LE, its count in bits 8-15 of the
second word), 0x9f0 / 0xdf0 HGMMA. If the decoder finds no HGMMA, the table no longer matches
the toolkit and the test says so rather than passing.

Usage: machine_code_test.py "OBJECT[;OBJECT...]" (the objects of memplan_attention_sm90a).
"""
import struct
import sys

KEYS_OF_SETUP = {"DenseSetup": 192, "SparseSetup": 128}


def embedded_cubins(data):
    """The ELF images inside a host object (the fatbinary's sm_90a cubin, uncompressed)."""
    start = 4  # skip the host object's own header
    while (i := data.find(b"\x7fELF", start)) >= 0:
        yield data[i:]
        start = i + 4


def text_sections(elf):
    """(name, bytes) of the .text.* sections of a 64-bit little-endian ELF."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    for name, _, _, _, offset, size in headers:
        end = elf.index(b"\0", names_at + name)
        section = elf[names_at + name:end].decode()
        if section.startswith(".text."):
            yield section[len(".text."):], elf[offset:offset + size]


def classify(code):
    """Yields 'MUFU', 'HGMMA', ('DEPBAR', pending) or None for each 16-byte instruction."""
    for pc in range(0, len(code) - 15, 16):
        low, high = struct.unpack_from("<QQ", code, pc)
        opcode = low & 0xFFF
        if opcode == 0x308:
            yield "MUFU"
        elif opcode in (0x9F0, 0xDF0):
            yield "HGMMA"
        elif opcode == 0x9C5 and low & (1 << 47):
            yield ("DEPBAR", (high >> 8) & 0xFF)
        else:
            yield None


def check_kernel(name, code):
    """An error message, or None when the loop's softmax precedes its wait for P V."""
    setup = next((s for s in KEYS_OF_SETUP if s in name), None)
    if setup is None:
        return f"{name}: a set-up this test does not know (add it to KEYS_OF_SETUP)"
    want = KEYS_OF_SETUP[setup] // 2
    ops = list(classify(code))
    if "HGMMA" not in ops:
        return f"{name}: no HGMMA decoded; the opcode table no longer matches the toolkit's SASS"
    loop_waits = [i for i, op in enumerate(ops) if op == ("DEPBAR", 1)]
    if len(loop_waits) != 1:
        return f"{name}: {len(loop_waits)} waits for one pending group, the loop has one"
    first = loop_waits[0]
    drain = next((i for i in range(first + 1, len(ops)) if ops[i] == ("DEPBAR", 0)), None)
    if drain is None:
        return f"{name}: no wait for zero pending groups after the loop's wait for one"
    exps = sum(1 for op in ops[first:drain] if op == "MUFU")
    if exps < want:
        return (f"{name} ({setup}): {exps} MUFU between S's wait and P V's, want >= {want}: "
                f"ptxas moved the wait for P V above the softmax again")
    print(f"{setup}: {exps} MUFU before the wait for P V (>= {want})")
    return None


def main():
    objects = [path for arg in sys.argv[1:] for path in arg.split(";") if path]
    errors, kernels = [], 0
    for path in objects:
        with open(path, "rb") as f:
            data = f.read()
        for cubin in embedded_cubins(data):
            try:
                sections = list(text_sections(cubin))
            except (struct.error, ValueError, IndexError):
                continue  # not a whole ELF image (bytes that only look like a header)
            for name, code in sections:
                if "flash_tma_kernel" in name:
                    kernels += 1
                    if (error := check_kernel(name, code)) is not None:
                        errors.append(error)
    if kernels == 0:
        errors.append(f"no flash_tma_kernel found in {objects}")
    for error in errors:
        print("FAIL:", error)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
