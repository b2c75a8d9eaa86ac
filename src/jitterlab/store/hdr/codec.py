"""HdrHistogram's binary encodings, read and written as HdrHistogram Java 2.2.2 does.

Read: V0, V1 and V2 integer histograms, plain or zlib-compressed, and DoubleHistograms
(a 16-byte wrapper around an integer histogram). Written: V2, compressed (what every
current HdrHistogram writes). A V2 payload is a run of ZigZag LEB128 numbers (at most 9
bytes each, the 9th byte holding 8 bits): a positive number is the next bucket's count,
a negative one a run of that many empty buckets. V0 and V1 payloads are fixed-width
big-endian counts (the word size is in the cookie). Anything that does not decode raises
:class:`HdrFormatError` saying what is wrong.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib

import numpy as np

from jitterlab.store.hdr.double import DoubleHistogram
from jitterlab.store.hdr.histogram import LONG_MAX, Histogram, HistogramRangeError

V0_COOKIE, V0_COMPRESSED = 0x1C849308, 0x1C849309
V1_COOKIE, V1_COMPRESSED = 0x1C849301, 0x1C849302
V2_COOKIE, V2_COMPRESSED = 0x1C849303, 0x1C849304
DOUBLE_COOKIE, DOUBLE_COMPRESSED = 0x0C72124E, 0x0C72124F
V2_WORD = 9  # the "word size" of a V2 encoding: up to 9 bytes per ZigZag LEB128 number
HEADER = struct.Struct(
    ">iiiiqqd"
)  # cookie, payload length, normalizing offset, digits, lowest, highest, ratio
V0_HEADER = struct.Struct(">iiqqq")  # cookie, digits, lowest, highest, total count
VERSIONS = {V0_COOKIE: "V0", V1_COOKIE: "V1", V2_COOKIE: "V2"}


class HdrFormatError(ValueError):
    """Bytes that are not an HdrHistogram encoding; the message says what is wrong."""


def _base(cookie: int) -> int:
    return cookie & ~0xF0


def _word_size(cookie: int) -> int:
    if _base(cookie) in (V2_COOKIE, V2_COMPRESSED):
        return V2_WORD
    return ((cookie & 0xF0) >> 4) & 0xE


# ---------------------------------------------------------------------- ZigZag LEB128


def _zigzag_slow(data: bytes) -> np.ndarray:
    """ZigZagEncoding.getLong over the whole buffer, one number at a time (the 9-byte case)."""
    out, i = [], 0
    while i < len(data):
        value, shift = 0, 0
        for k in range(9):
            if i >= len(data):
                raise HdrFormatError("the payload ends inside a number")
            b = data[i]
            i += 1
            if k == 8:
                value |= b << 56
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        out.append((value >> 1) ^ -(value & 1))
    return np.array(out, dtype=np.int64)


def zigzag_decode(data: bytes) -> np.ndarray:
    """Every ZigZag LEB128-64b9B number in ``data``, as int64."""
    b = np.frombuffer(data, dtype=np.uint8)
    if b.size == 0:
        return np.zeros(0, dtype=np.int64)
    last = (b & 0x80) == 0
    if not last[-1]:
        raise HdrFormatError("the payload ends inside a number")
    ends = np.flatnonzero(last)
    starts = np.concatenate([[0], ends[:-1] + 1])
    if int((ends - starts).max()) >= 8:  # a 9-byte number: its last byte carries 8 bits
        return _zigzag_slow(data)
    group = np.repeat(np.arange(ends.size), ends - starts + 1)
    position = np.arange(b.size) - starts[group]
    parts = (b & 0x7F).astype(np.uint64) << (7 * position).astype(np.uint64)
    value = np.bitwise_or.reduceat(parts, starts)
    return ((value >> np.uint64(1)).astype(np.int64)) ^ -((value & np.uint64(1)).astype(np.int64))


def zigzag_encode(values: list[int]) -> bytes:
    """ZigZagEncoding.putLong of each value."""
    out = bytearray()
    for v in values:
        z = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
        for _ in range(8):
            if z >> 7 == 0:
                break
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        else:
            out.append(z & 0xFF)
            continue
        out.append(z)
    return bytes(out)


# ---------------------------------------------------------------------- decoding


def decode(data: bytes) -> Histogram | DoubleHistogram:
    """A histogram from its binary encoding (any version, compressed or not, integer or
    double), as Java's ``EncodableHistogram.decodeFromCompressedByteBuffer`` and
    ``decodeFromByteBuffer`` read it."""
    if len(data) < 4:
        raise HdrFormatError(f"{len(data)} bytes are too short for a histogram")
    cookie = struct.unpack_from(">i", data)[0]
    if cookie in (DOUBLE_COOKIE, DOUBLE_COMPRESSED):
        if len(data) < 16:
            raise HdrFormatError("the DoubleHistogram header is cut off")
        digits, highest_to_lowest = struct.unpack_from(">iq", data, 4)
        inner = _decode_integer(data[16:], compressed=cookie == DOUBLE_COMPRESSED)
        try:
            double = DoubleHistogram(highest_to_lowest, digits, inner)
        except HistogramRangeError as e:
            raise HdrFormatError(f"DoubleHistogram header: {e}") from e
        double.auto_resize = True
        return double
    base = _base(cookie)
    if base in (V0_COMPRESSED, V1_COMPRESSED, V2_COMPRESSED):
        return _decode_integer(data, compressed=True)
    if base in (V0_COOKIE, V1_COOKIE, V2_COOKIE):
        return _decode_integer(data, compressed=False)
    raise HdrFormatError(f"cookie 0x{cookie & 0xFFFFFFFF:08x} is not an HdrHistogram encoding")


def _decode_integer(data: bytes, compressed: bool) -> Histogram:
    if len(data) < 8:
        raise HdrFormatError("the histogram's header is cut off")
    if compressed:
        cookie, length = struct.unpack_from(">ii", data)
        if _base(cookie) not in (V0_COMPRESSED, V1_COMPRESSED, V2_COMPRESSED):
            raise HdrFormatError(f"cookie 0x{cookie & 0xFFFFFFFF:08x} is not a compressed HdrHistogram")
        if length < 0 or 8 + length > len(data):
            raise HdrFormatError(f"the compressed part is {len(data) - 8} bytes, the header says {length}")
        inflater = zlib.decompressobj()
        try:
            data = inflater.decompress(data[8 : 8 + length])
        except zlib.error as e:
            raise HdrFormatError(f"the compressed histogram is damaged ({e})") from e
        if not inflater.eof:
            raise HdrFormatError("the compressed histogram ends early")
    if len(data) < 4:
        raise HdrFormatError("the histogram's header is cut off")
    cookie = struct.unpack_from(">i", data)[0]
    base = _base(cookie)
    if base == V0_COOKIE:
        if len(data) < V0_HEADER.size:
            raise HdrFormatError("the V0 header is cut off")
        _, digits, lowest, highest, _total = V0_HEADER.unpack_from(data)
        payload_length, ratio, offset, header = LONG_MAX, 1.0, 0, V0_HEADER.size
    elif base in (V1_COOKIE, V2_COOKIE):
        if base == V2_COOKIE and _word_size(cookie) != V2_WORD:
            raise HdrFormatError(f"cookie 0x{cookie & 0xFFFFFFFF:08x}: a V2 encoding with a fixed word size")
        if len(data) < HEADER.size:
            raise HdrFormatError(f"the {VERSIONS[base]} header is cut off")
        _, payload_length, offset, digits, lowest, highest, ratio = HEADER.unpack_from(data)
        header = HEADER.size
    else:
        raise HdrFormatError(f"cookie 0x{cookie & 0xFFFFFFFF:08x} is not an HdrHistogram encoding")
    try:
        histogram = Histogram(lowest, max(highest, 0), digits, auto_resize=True)
    except HistogramRangeError as e:
        raise HdrFormatError(
            f"{VERSIONS[base]} header: {e} (lowest {lowest}, highest {highest}, digits {digits})"
        ) from e
    histogram.i2d, histogram.d2i = ratio, 1.0 / ratio if ratio else float("inf")
    del offset  # the normalizing offset moves storage only: the payload is in logical order
    capacity = min(histogram.counts_len * 8, payload_length)
    payload = data[header : header + capacity]
    if payload_length != LONG_MAX and len(payload) < payload_length:
        raise HdrFormatError(f"the payload is {len(payload)} bytes, the header says {payload_length}")
    word = _word_size(cookie)
    if word == V2_WORD:
        numbers = zigzag_decode(payload)
        if (numbers < -(2**31 - 1)).any():
            raise HdrFormatError("an encoded run of empty buckets is longer than 2^31 - 1")
        steps = np.where(numbers < 0, -numbers, 1)
        where = np.cumsum(steps) - steps
        filled = int(where[-1] + steps[-1]) if numbers.size else 0
        keep = numbers > 0
        index, counts = where[keep], numbers[keep]
    elif word in (2, 4, 8):
        usable = len(payload) - len(payload) % word
        counts_all = np.frombuffer(payload[:usable], dtype=f">i{word}").astype(np.int64)
        if (counts_all < 0).any():
            raise HdrFormatError(
                f"a negative count ({int(counts_all.min())}) in the {VERSIONS[base]} payload"
            )
        filled = counts_all.size
        index = np.flatnonzero(counts_all)
        counts = counts_all[index]
    else:
        raise HdrFormatError(f"cookie 0x{cookie & 0xFFFFFFFF:08x}: word size {word} is not 2, 4, 8 or 9")
    if index.size and int(index[-1]) >= histogram.counts_len:
        raise HdrFormatError(
            f"counts beyond the range the header gives (bucket {int(index[-1])} of {histogram.counts_len})"
        )
    histogram.counts[index] = counts
    histogram.establish_tracking(min(filled, histogram.counts_len))
    return histogram


def from_base64(text: str) -> Histogram | DoubleHistogram:
    """A histogram from a log line's base64 field."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as e:
        raise HdrFormatError(f"the histogram is not valid base64 ({e})") from e
    return decode(data)


# ---------------------------------------------------------------------- encoding


def encode(histogram: Histogram | DoubleHistogram, compressed: bool = True, level: int = 9) -> bytes:
    """The V2 encoding (compressed with zlib at ``level``, as HistogramLogWriter does with
    Deflater.BEST_COMPRESSION)."""
    if isinstance(histogram, DoubleHistogram):
        wrapper = struct.pack(
            ">iiq",
            DOUBLE_COMPRESSED if compressed else DOUBLE_COOKIE,
            histogram.digits,
            histogram.highest_to_lowest,
        )
        return wrapper + encode(histogram.inner, compressed, level)
    h = histogram
    limit = h.index_of(h._max) + 1  # Java's countsArrayIndex(maxValue) + 1
    counts = h.counts[:limit]
    if (counts < 0).any():
        raise HdrFormatError("a histogram with negative counts cannot be encoded")
    numbers: list[int] = []
    i = 0
    values = counts.tolist()
    while i < limit:
        count = values[i]
        i += 1
        if count == 0:
            run = 1
            while i < limit and values[i] == 0:
                run += 1
                i += 1
            numbers.append(-run if run > 1 else 0)
        else:
            numbers.append(count)
    payload = zigzag_encode(numbers)
    body = HEADER.pack(V2_COOKIE | 0x10, len(payload), 0, h.digits, h.lowest, h.highest, h.i2d) + payload
    if not compressed:
        return body
    packed = zlib.compress(body, level)
    return struct.pack(">ii", V2_COMPRESSED | 0x10, len(packed)) + packed


def to_base64(histogram: Histogram | DoubleHistogram) -> str:
    return base64.b64encode(encode(histogram)).decode("ascii")
