#!/usr/bin/env python3
"""Writes the generated seeds of fuzz/corpus/ (docs/FUZZING.md).

    python3 fuzz/seeds.py          rewrite them (from anywhere)
    python3 fuzz/seeds.py --check  exit 1, naming the files, when the
                                   corpus differs from what it would write

The script owns every file named seed-* of fuzz/corpus/: corpus/schema (every
schema of ops/native_functions.yaml, one file per operator, named after it),
corpus/boxed (one natural call per operator of that file, by name),
corpus/dlpack (DLPack descriptions and foreign geometries),
corpus/kdgen_yaml (the small files of tests/kdgen and tests/kdgen/gen, and
each backend fixture of tests/kdgen/backend after its upstream and tags), and
the finding-* files of issue 15's findings (findings() below). It removes
seed-* files it would not write. Every other file (hand-written seeds,
later findings) is left alone: name a hand-made seed anything but seed-*.
The byte formats are the harnesses' (fuzz/fuzz.h, fuzz_boxed.c,
fuzz_dlpack.c); run the script again when they, the operators or the kdgen
fixtures change (the CTest test fuzz_seeds_in_step runs --check).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def schemas():
    out = []
    with open(os.path.join(ROOT, "ops", "native_functions.yaml")) as f:
        for line in f:
            m = re.match(r"^- func: (.*)$", line.rstrip("\n"))
            if m:
                out.append(m.group(1))
    return out


def split_args(text):
    """Top-level comma split of an argument list."""
    depth, cur, out = 0, "", []
    for c in text:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


# fuzz.h: fuzz_int's byte b < 200 is b - 16; fuzz_double's is (b - 16) / (4 if b odd else 1).
def small(v):
    return bytes([v + 16])


# fuzz_boxed.c: make_tensor: ndim, sizes, dtype, how, then (kind, value) per element (up to 8).
TENSOR = bytes([2, 2, 3, 8, 0]) + b"".join(b"\x00" + small(v) for v in range(1, 7))


def typed(t):
    """Bytes of fuzz_boxed.c's make_typed for a natural value of type t."""
    t = re.sub(r"\([a-z!* ->|]*\)", "", t).strip()  # alias annotations
    if t.endswith("?"):
        return b"\x00\x00" + typed(t[:-1])  # typed, then "not None"
    if t.endswith("]"):
        e = t[: t.index("[")]
        if e in ("int", "SymInt"):
            return b"\x00" + bytes([2, 0]) + bytes([1, 0]) + bytes([2, 0])  # [1, 2]
        if e == "Tensor":
            return b"\x00" + bytes([2]) + TENSOR + TENSOR
        if e == "Tensor?":
            return b"\x00" + bytes([2]) + b"\x01" + TENSOR + b"\x01" + TENSOR
        return b"\x00" + bytes([2]) + typed(e) + typed(e)
    if t == "Tensor":
        return b"\x00" + TENSOR
    if t in ("int", "SymInt"):
        return b"\x00\x00" + bytes([3])  # small_size 3 - 2 = 1
    if t == "float":
        return b"\x00" + small(2)
    if t == "bool":
        return b"\x00\x01"
    if t in ("Scalar", "number"):
        return b"\x00\x00" + small(2)
    if t == "ScalarType":
        return b"\x00\x08"  # float32
    if t == "str":
        return b"\x00\x00"  # "mean"
    return b"\x00\x00"


def boxed_seed(schema):
    name, rest = schema.split("(", 1)
    args = rest[: rest.rindex(") ->")]
    body = b""
    for a in split_args(args):
        if a == "*" or "=" in a:
            continue
        body += typed(a.rsplit(" ", 1)[0])
    return b"\xff" + b"aten::" + name.encode() + b"\x00" + b"\x00" + body


def dlpack_seeds():
    """fuzz_dlpack.c mode 0: ndim, has_strides (+ 2: the versioned form),
    (shape[, stride]) per dim, code, bits, lanes, device, byte_offset, buffer
    mode, then for the versioned form its major-version and flags bytes."""
    def dl(shape, strides=None, code=2, bits=2, dev=0, off=b"\x10", mode=0, v=None):
        form = 0 if v is None else 2
        b = bytes([0, len(shape), (1 if strides is not None else 0) | form])
        for i, n in enumerate(shape):
            b += n
            if strides is not None:
                b += strides[i]
        b += bytes([code, bits, 0, dev]) + (small(0) if dev >= 200 else b"")  # device id
        return b + off + bytes([mode]) + (bytes(v) if v is not None else b"")

    s = {}
    s["dl-f32-2x3"] = dl([small(2), small(3)])
    s["dl-f64-strided"] = dl([small(2), small(3)], [small(1), small(2)], bits=3)
    s["dl-i8-scalar"] = dl([], code=0, bits=0)
    s["dl-u8-empty"] = dl([small(0), small(4)], code=1, bits=0)
    s["dl-c64-offset"] = dl([small(3)], code=5, bits=3, off=small(8))
    s["dl-bf16"] = dl([small(4)], code=4, bits=1)
    s["dl-cuda"] = dl([small(2)], dev=204)  # devs[204 % 12] = kDLCUDA
    s["dl-null-data"] = dl([small(2)], mode=2)
    s["dl-expanded"] = dl([small(3), small(2)], [small(0), small(1)])
    # The versioned form, v = [version byte, flags byte]: a version byte below
    # 240 is major 1, 242 is major 2; flags byte 129 is the read-only bit.
    s["dl-v-bool"] = dl([small(2), small(2)], code=6, bits=0, v=[1, 0])
    s["dl-v-major2"] = dl([small(2)], v=[242, 0])
    s["dl-v-read-only"] = dl([small(2)], v=[0, 129])
    # Modes 1-4: nbytes/4, dtype, offset, ndim, has_strides, (size, stride) per dim.
    def geo(what, nbytes, dtype, off, dims, strided, extra=b""):
        b = bytes([what, nbytes, dtype]) + off + bytes([len(dims), strided])
        for n, st in dims:
            b += n + st
        return b + extra
    s["from-storage"] = geo(1, 16, 8, small(1), [(small(2), small(3)), (small(3), small(1))], 1)
    s["as-strided"] = geo(2, 16, 0, small(2), [(small(4), small(2))], 1)
    s["empty-strided"] = geo(3, 0, 9, small(0), [(small(2), small(1)), (small(3), small(2))], 1)
    s["empty-meta"] = geo(3, 0, 9, small(0), [(small(5), small(1))], 0, b"\x01")
    s["resize"] = geo(4, 8, 8, small(0), [(small(3), small(1)), (small(4), small(3))], 0)
    return s


def findings():
    """Regressions: the known findings of issue 15, one file each, as a dict
    of paths under corpus/ (more are added by hand as finding-* when fuzzing
    finds them)."""
    f = {}
    # (1) a list default on an Any or type-variable argument
    f["schema/finding-1-any-list-default"] = "f(Any x=[]) -> ()"
    f["schema/finding-1-typevar-list-default"] = "f(t x=[1]) -> ()"
    # (2) a zero-element tensor with a huge storage offset: kd_tensor_data
    # overflows (fuzz_dlpack.c mode 1: float32 at element 2^62 of a 16-byte storage)
    f["dlpack/finding-2-empty-huge-offset"] = bytes([1, 4, 8, 204, 1, 1]) + small(0) + small(1)
    # (3) row-major strides with a zero dimension: [2, 2^62, 2^62, 0]
    f["dlpack/finding-3-rowmajor-zero-dim"] = (bytes([0, 4, 0]) + small(2) + bytes([204, 204])
                                                + small(0) + bytes([2, 2, 0, 0]) + small(0) + b"\x00")
    # (4) byte_offset: wrapping (2^64 - 16 over a 16-byte buffer), misaligned
    f["dlpack/finding-4-byte-offset-wrap"] = (bytes([0, 1, 0]) + small(2) + bytes([2, 2, 0, 0])
                                              + small(-16) + b"\x03")
    f["dlpack/finding-4-byte-offset-misaligned"] = (bytes([0, 1, 0]) + small(2)
                                                    + bytes([2, 2, 0, 0]) + small(1) + b"\x00")
    # (5) the storage size (last + 1) * itemsize overflows: complex128,
    # shape [2, 1], strides [2^62, 1]
    f["dlpack/finding-5-storage-size"] = (bytes([0, 2, 1]) + small(2) + bytes([204]) + small(1)
                                          + small(1) + bytes([5, 4, 0, 0]) + small(0) + b"\x03")
    # (6) arange of exactly 2^63 elements: ints -1 .. INT64_MAX, floats 0 .. 2^63
    f["boxed/finding-6-arange-int"] = (b"\xffaten::arange.start_step\x00\x02"
                                       + b"\x00\x00" + small(-1) + b"\x00\x00" + bytes([200]))
    f["boxed/finding-6-arange-float"] = (b"\xffaten::arange.start_step\x00\x02"
                                         + b"\x00\x01" + small(0) + b"\x00\x01" + bytes([207]))
    f["boxed/finding-6-arange-end"] = b"\xffaten::arange\x00\x01" + b"\x00\x01" + bytes([207])
    # (7) view / reshape of a zero-element tensor into [0, 2^62, 4]
    empty = b"\x00" + bytes([1, 0, 8, 0])
    shape = b"\x00" + bytes([3, 0]) + bytes([0, 0]) + bytes([0xF0, 204, 0]) + bytes([4, 0])
    f["boxed/finding-7-view-empty-overflow"] = b"\xffaten::view\x00\x02" + empty + shape
    f["boxed/finding-7-reshape-empty-overflow"] = b"\xffaten::reshape\x00\x02" + empty + shape
    # (8) kd: a nested list where a size is expected
    f["kd_lang/finding-8-zeros-nested-list"] = "zeros([1,3,[4]])\n"
    return f


def small_yaml(folder):
    """The .yaml files of folder of at most 4 KiB, sorted by name."""
    return [f for f in sorted(os.listdir(folder))
            if f.endswith(".yaml") and os.path.getsize(os.path.join(folder, f)) <= 4096]


def kdgen_seeds():
    s = {}
    src = os.path.join(ROOT, "tests", "kdgen")
    for folder in (src, os.path.join(src, "gen")):
        for f in small_yaml(folder):
            if f in s:
                raise SystemExit("seeds.py: two kdgen fixtures named " + f)
            s[f] = read(os.path.join(folder, f))
    tags = read(os.path.join(ROOT, "ops", "tags.yaml"))
    s["valid-with-tags"] = read(os.path.join(src, "valid.yaml")) + b"\x00" + tags
    # Backend files (tests/kdgen/backend): upstream, NUL, tags, NUL, backend.
    bsrc = os.path.join(src, "backend")
    upstream = read(os.path.join(bsrc, "upstream.yaml"))
    for f in small_yaml(bsrc):
        if f != "upstream.yaml":
            s["backend-" + f] = upstream + b"\x00" + tags + b"\x00" + read(os.path.join(bsrc, f))
    return s


def corpus():
    """Every file the script owns: {path under corpus/: bytes}."""
    out = {}
    for path, data in findings().items():
        out[path] = data.encode() if isinstance(data, str) else data
    # Named after the operator (not numbered): a new operator adds one file.
    for s in schemas():
        name = s.split("(", 1)[0]
        out["schema/seed-" + name] = s.encode()
        out["boxed/seed-" + name] = boxed_seed(s)
    for name, data in dlpack_seeds().items():
        out["dlpack/seed-" + name] = data
    for name, data in kdgen_seeds().items():
        out["kdgen_yaml/seed-" + name] = data
    return out


def owned_now():
    """The seed-* files in the corpus now (paths under corpus/)."""
    out = set()
    for d in sorted(os.listdir(CORPUS)):
        if os.path.isdir(os.path.join(CORPUS, d)):
            out |= {d + "/" + f for f in os.listdir(os.path.join(CORPUS, d)) if f.startswith("seed-")}
    return out


def main(argv):
    want = corpus()
    stale = sorted(owned_now() - set(want))
    if argv[1:] == ["--check"]:
        bad = [p for p in sorted(want)
               if not os.path.exists(os.path.join(CORPUS, p)) or read(os.path.join(CORPUS, p)) != want[p]]
        for p in bad:
            print("seeds.py: fuzz/corpus/%s differs from what the script writes" % p)
        for p in stale:
            print("seeds.py: fuzz/corpus/%s is a seed-* file the script does not write (a hand-made seed is named other than seed-*)" % p)
        if bad or stale:
            print("seeds.py: run python3 fuzz/seeds.py and commit fuzz/corpus")
            return 1
        print("seeds.py: fuzz/corpus agrees with the script (%d files)" % len(want))
        return 0
    if argv[1:]:
        print(__doc__)
        return 2
    for p in stale:
        os.remove(os.path.join(CORPUS, p))
    for p, data in want.items():
        os.makedirs(os.path.dirname(os.path.join(CORPUS, p)), exist_ok=True)
        with open(os.path.join(CORPUS, p), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
