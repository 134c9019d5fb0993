r"""``format`` as regular languages over JSON string content.

Each supported format is written from its RFC grammar (RFC 3339 date/time/duration,
RFC 4122 uuid, RFC 2673/4291 IP addresses, RFC 1123 hostnames, RFC 5321 emails, RFC 3986
URIs, RFC 3987 IRIs, RFC 6570 URI templates, RFC 6901 JSON pointers and the relative JSON
pointers of draft-bhutton-relative-json-pointer-00). ASCII characters are accepted in the
spelling ``json.dumps`` writes (raw, or ``\"`` and ``\\`` in an email's quoted local part);
the other characters an IRI, a URI template or a JSON pointer may hold, in every JSON
spelling. Leap seconds (``:60``), IDNA A-labels (``xn--``) and email address literals other
than ``[ipv4]`` are not accepted (a documented subset: never an invalid string);
``idn-email``, ``idn-hostname`` and ``regex`` are not supported (refused, as unknown formats are).

One documented relaxation: a hostname's *total* length limit (253 characters) is not
enforced -- labels are (1-63 characters each). Intersecting the label grammar with a total
length bound needs a ~24,000-state automaton (tens of seconds to compile, on every schema
that uses ``hostname`` or ``email``); add ``maxLength`` to the schema to bound it.
"""

from __future__ import annotations

from functools import cache

from ..ir import Expr, alt, and_, byteset, lit, not_, repeat, seq
from .strings import encode_chars

__all__ = ["FORMATS", "FORMAT_EXAMPLES", "UNSUPPORTED_FORMATS", "format_expr"]


def _c(chars: str) -> Expr:
    return byteset(*(ord(ch) for ch in chars))


DIGIT = byteset((0x30, 0x39))
HEX = byteset((0x30, 0x39), (0x41, 0x46), (0x61, 0x66))
ALPHA = byteset((0x41, 0x5A), (0x61, 0x7A))
ALNUM = byteset((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A))


def _rng(lo: int, hi: int, width: int) -> Expr:
    """Zero-padded decimal numbers lo..hi of exactly ``width`` digits."""
    return alt(*(lit(str(v).zfill(width)) for v in range(lo, hi + 1)))


def _date() -> Expr:
    year = repeat(DIGIT, 4, 4)
    m31 = alt(*(lit(m) for m in ("01", "03", "05", "07", "08", "10", "12")))
    m30 = alt(*(lit(m) for m in ("04", "06", "09", "11")))
    mult4 = [str(v).zfill(2) for v in range(0, 100, 4)]
    leap = alt(
        seq(repeat(DIGIT, 2, 2), alt(*(lit(x) for x in mult4 if x != "00"))),
        seq(alt(*(lit(x) for x in mult4)), lit("00")),
    )
    return alt(
        seq(year, lit("-"), m31, lit("-"), _rng(1, 31, 2)),
        seq(year, lit("-"), m30, lit("-"), _rng(1, 30, 2)),
        seq(year, lit("-02-"), _rng(1, 28, 2)),
        seq(leap, lit("-02-29")),
    )


def _time() -> Expr:
    hour, minute, second = _rng(0, 23, 2), _rng(0, 59, 2), _rng(0, 59, 2)
    frac = seq(lit("."), repeat(DIGIT, 1, None))
    offset = alt(_c("Zz"), seq(_c("+-"), hour, lit(":"), minute))
    return seq(hour, lit(":"), minute, lit(":"), second, repeat(frac, 0, 1), offset)


def _duration() -> Expr:
    n = repeat(DIGIT, 1, None)

    def u(ch: str) -> Expr:
        return seq(n, lit(ch))

    def opt(x: Expr) -> Expr:
        return repeat(x, 0, 1)

    second = u("S")
    minute = seq(u("M"), opt(second))
    hour = seq(u("H"), opt(minute))
    dtime = seq(lit("T"), alt(hour, minute, second))
    day = u("D")
    month = seq(u("M"), opt(day))
    year = seq(u("Y"), opt(month))
    ddate = seq(alt(day, month, year), opt(dtime))
    return seq(lit("P"), alt(ddate, dtime, u("W")))


def _uuid() -> Expr:
    def h(k: int) -> Expr:
        return repeat(HEX, k, k)

    return seq(h(8), lit("-"), h(4), lit("-"), h(4), lit("-"), h(4), lit("-"), h(12))


def _dec_octet() -> Expr:
    return alt(
        DIGIT,
        seq(byteset((0x31, 0x39)), DIGIT),
        seq(lit("1"), DIGIT, DIGIT),
        seq(lit("2"), byteset((0x30, 0x34)), DIGIT),
        seq(lit("25"), byteset((0x30, 0x35))),
    )


def _ipv4() -> Expr:
    o = _dec_octet()
    return seq(o, lit("."), o, lit("."), o, lit("."), o)


def _ipv6() -> Expr:
    h16 = repeat(HEX, 1, 4)
    ls32 = alt(seq(h16, lit(":"), h16), _ipv4())
    h16c = seq(h16, lit(":"))

    def pre(k: int) -> Expr:  # [ *k( h16 ":" ) h16 ]
        return repeat(seq(repeat(h16c, 0, k), h16), 0, 1) if k >= 0 else lit("")

    return alt(
        seq(repeat(h16c, 6, 6), ls32),
        seq(lit("::"), repeat(h16c, 5, 5), ls32),
        seq(repeat(h16, 0, 1), lit("::"), repeat(h16c, 4, 4), ls32),
        seq(pre(1), lit("::"), repeat(h16c, 3, 3), ls32),
        seq(pre(2), lit("::"), repeat(h16c, 2, 2), ls32),
        seq(pre(3), lit("::"), h16c, ls32),
        seq(pre(4), lit("::"), ls32),
        seq(pre(5), lit("::"), h16),
        seq(pre(6), lit("::")),
    )


def _label() -> Expr:
    ldh = byteset((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), 0x2D)
    label = alt(ALNUM, seq(ALNUM, repeat(ldh, 0, 61), ALNUM))
    # "--" in positions 3-4 marks IDNA A-labels ("xn--..."), whose Punycode rules are not
    # regular: such labels are not accepted (a subset: never an invalid hostname).
    return and_(label, not_(seq(repeat(ldh, 2, 2), lit("--"), repeat(ldh))))


def _hostname() -> Expr:
    lab = _label()
    return seq(lab, repeat(seq(lit("."), lab)))


def _email() -> Expr:
    atext = alt(ALNUM, _c("!#$%&'*+-/=?^_`{|}~"))
    dot_string = seq(repeat(atext, 1, None), repeat(seq(lit("."), repeat(atext, 1, None))))
    # Quoted-string: printable ASCII and space but '"' and '\\', or either after a backslash
    # (RFC 5321 qtextSMTP / quoted-pairSMTP), written as JSON writes them
    qtext = encode_chars([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)], escapes=False)
    quoted_pair = seq(encode_chars([(0x5C, 0x5C)], escapes=False), encode_chars([(0x20, 0x7E)], escapes=False))
    quoted = seq(lit('\\"'), repeat(alt(qtext, quoted_pair)), lit('\\"'))
    # address literals: IPv4 only (an IPv6 literal's 150 states, after a local part of any length,
    # doubled the product of an email with ``maxLength: 1024`` past the intersection limit)
    literal = seq(lit("["), _ipv4(), lit("]"))
    return seq(alt(dot_string, quoted), lit("@"), alt(_hostname(), literal))


#: RFC 3987's non-ASCII characters of IRIs (``ucschar``) and of their queries (``iprivate``)
UCSCHAR = [(0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF),
           *((p << 16, (p << 16) + 0xFFFD) for p in range(1, 14)), (0xE1000, 0xEFFFD)]
IPRIVATE = [(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)]


def _uri_parts(iri: bool = False) -> dict[str, Expr]:
    """RFC 3986's ``URI`` and ``URI-reference``; with ``iri``, RFC 3987's ``IRI`` and
    ``IRI-reference`` (the same grammar with ``ucschar`` unreserved, ``iprivate`` in queries)."""
    unreserved = alt(ALNUM, _c("-._~"), *([encode_chars(UCSCHAR)] if iri else []))
    pct = seq(lit("%"), HEX, HEX)
    sub_delims = _c("!$&'()*+,;=")
    pchar = alt(unreserved, pct, sub_delims, _c(":@"))
    scheme = seq(ALPHA, repeat(alt(ALNUM, _c("+-."))))
    userinfo = repeat(alt(unreserved, pct, sub_delims, lit(":")))
    ipvfuture = seq(_c("vV"), repeat(HEX, 1, None), lit("."), repeat(alt(unreserved, sub_delims, lit(":")), 1, None))
    ip_literal = seq(lit("["), alt(_ipv6(), ipvfuture), lit("]"))
    reg_name = repeat(alt(unreserved, pct, sub_delims))
    host = alt(ip_literal, _ipv4(), reg_name)
    port = repeat(DIGIT)
    authority = seq(repeat(seq(userinfo, lit("@")), 0, 1), host, repeat(seq(lit(":"), port), 0, 1))
    segment = repeat(pchar)
    segment_nz = repeat(pchar, 1, None)
    segment_nz_nc = repeat(alt(unreserved, pct, sub_delims, lit("@")), 1, None)
    path_abempty = repeat(seq(lit("/"), segment))
    path_absolute = seq(lit("/"), repeat(seq(segment_nz, path_abempty), 0, 1))
    path_rootless = seq(segment_nz, path_abempty)
    path_noscheme = seq(segment_nz_nc, path_abempty)
    fragment = repeat(alt(pchar, _c("/?")))
    query = repeat(alt(pchar, _c("/?"), encode_chars(IPRIVATE))) if iri else fragment
    tail = seq(repeat(seq(lit("?"), query), 0, 1), repeat(seq(lit("#"), fragment), 0, 1))
    hier = alt(seq(lit("//"), authority, path_abempty), path_absolute, path_rootless, lit(""))
    uri = seq(scheme, lit(":"), hier, tail)
    rel = seq(alt(seq(lit("//"), authority, path_abempty), path_absolute, path_noscheme, lit("")), tail)
    if iri:
        return {"iri": uri, "iri-reference": alt(uri, rel)}
    return {"uri": uri, "uri-reference": alt(uri, rel)}


def _uri_template() -> Expr:
    """RFC 6570 level 4, with erratum 6937 (an apostrophe is a literal character)."""
    pct = seq(lit("%"), HEX, HEX)
    literal = alt(byteset(0x21, (0x23, 0x24), (0x26, 0x3B), 0x3D, (0x3F, 0x5B), 0x5D, 0x5F, (0x61, 0x7A), 0x7E),
                  encode_chars(UCSCHAR + IPRIVATE), pct)
    varchar = alt(ALNUM, lit("_"), pct)
    varname = seq(varchar, repeat(seq(repeat(lit("."), 0, 1), varchar)))
    modifier = alt(seq(lit(":"), byteset((0x31, 0x39)), repeat(DIGIT, 0, 3)), lit("*"))
    varspec = seq(varname, repeat(modifier, 0, 1))
    expression = seq(lit("{"), repeat(_c("+#./;?&=,!@|"), 0, 1), varspec, repeat(seq(lit(","), varspec)), lit("}"))
    return repeat(alt(literal, expression))


def _json_pointer() -> Expr:
    # any character but '/' and '~', or ~0 / ~1, in every JSON spelling
    plain = encode_chars([(0, 0x2E), (0x30, 0x7D), (0x7F, 0x10FFFF)])
    tilde = seq(encode_chars([(0x7E, 0x7E)]), encode_chars([(0x30, 0x31)]))
    slash = encode_chars([(0x2F, 0x2F)])
    return repeat(seq(slash, repeat(alt(plain, tilde))))


def _relative_json_pointer(adjust: bool) -> Expr:
    """A non-negative integer, then ``#`` or a JSON pointer; with ``adjust`` (draft 2020-12's
    draft-bhutton-relative-json-pointer-00), an index adjustment ``+n``/``-n`` may follow it."""
    positive = seq(byteset((0x31, 0x39)), repeat(DIGIT))
    head = alt(lit("0"), positive)
    if adjust:
        head = seq(head, repeat(seq(_c("+-"), positive), 0, 1))
    return seq(head, alt(lit("#"), _json_pointer()))


def _builders() -> dict:
    return {
        "date": _date,
        "time": lambda: _time(),
        "date-time": lambda: seq(_date(), _c("Tt"), _time()),
        "duration": _duration,
        "uuid": _uuid,
        "ipv4": _ipv4,
        "ipv6": _ipv6,
        "hostname": _hostname,
        "email": _email,
        "uri": lambda: _uri_parts()["uri"],
        "uri-reference": lambda: _uri_parts()["uri-reference"],
        "iri": lambda: _uri_parts(iri=True)["iri"],
        "iri-reference": lambda: _uri_parts(iri=True)["iri-reference"],
        "uri-template": _uri_template,
        "json-pointer": _json_pointer,
        "relative-json-pointer": lambda: _relative_json_pointer(adjust=True),
    }


FORMATS = tuple(_builders())

#: a typical value of each supported format (what a model writes most), for warm-up
#: (:meth:`logitgate.engine.compiler.GrammarCompiler.warm_up` fills their masks) and tests
FORMAT_EXAMPLES: dict[str, tuple[str, ...]] = {
    "date": ("2024-05-17",),
    "time": ("13:45:30Z", "08:05:00+02:00"),
    "date-time": ("2024-05-17T13:45:30Z", "2023-11-02T08:05:00.250+02:00"),
    "duration": ("P3DT4H5M", "PT30S"),
    "uuid": ("123e4567-e89b-12d3-a456-426614174000",),
    "ipv4": ("192.168.0.1",),
    "ipv6": ("2001:db8::8a2e:370:7334",),
    "hostname": ("api.example.com",),
    "email": ("jane.doe@example.com", "bob@mail.example.org"),
    "uri": ("https://example.com/docs/page?id=42#top",),
    "uri-reference": ("/api/v1/items?page=2", "../images/logo.png"),
    "iri": ("https://example.com/café?q=1#top",),
    "iri-reference": ("/wiki/Café", "../images/logo.png"),
    "uri-template": ("https://api.example.com/users/{id}{?fields,page}",),
    "json-pointer": ("/definitions/item/0",),
    "relative-json-pointer": ("1/name", "0#"),
}


def _pydantic_uuid(version: int) -> str:
    """pydantic's ``UUID{version}`` as it validates a JSON string: 32 hex digits of either case,
    hyphenated 8-4-4-4-12 (also in braces, or after ``urn:uuid:``) or not at all, with that version
    digit and the RFC 4122 variant (``8``, ``9``, ``a`` or ``b``)."""

    def hx(n: int) -> str:
        return f"[0-9a-fA-F]{{{n}}}"

    hyphenated = f"{hx(8)}-{hx(4)}-{version}{hx(3)}-[89abAB]{hx(3)}-{hx(12)}"
    return f"{hyphenated}|\\{{{hyphenated}\\}}|urn:uuid:{hyphenated}|{hx(12)}{version}{hx(3)}[89abAB]{hx(15)}"


def _pydantic_ip_address() -> str:
    """pydantic's ``IPvAnyAddress`` (Python's ``ipaddress``): an IPv4 address (decimal octets
    without leading zeros) or an IPv6 address (RFC 4291's text forms, hex digits of either case),
    the latter with an optional scope id (``%`` then characters other than ``%`` and ``/``)."""
    octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
    v4 = f"{octet}(?:\\.{octet}){{3}}"
    h16 = "[0-9a-fA-F]{1,4}"
    ls32 = f"(?:{h16}:{h16}|{v4})"

    def before(k: int) -> str:  # [ *k( h16 ":" ) h16 ]
        return f"(?:(?:{h16}:){{0,{k}}}{h16})?"

    v6 = "|".join((f"(?:{h16}:){{6}}{ls32}", f"::(?:{h16}:){{5}}{ls32}", f"(?:{h16})?::(?:{h16}:){{4}}{ls32}",
                   *(f"{before(k)}::(?:{h16}:){{{4 - k}}}{ls32}" for k in (1, 2, 3)),
                   f"{before(4)}::{ls32}", f"{before(5)}::{h16}", f"{before(6)}::"))
    return f"{v4}|(?:{v6})(?:%[^%/]+)?"


#: formats pydantic writes, as pydantic validates a JSON string of them (each checked against
#: pydantic's validators in the tests). Applied to a pydantic model or ``TypeAdapter`` given as the
#: schema; for a schema dict, ``json_schema_grammar(..., formats=PYDANTIC_FORMATS)``.
#:
#: - any string: ``password`` (``SecretStr``, ``SecretBytes``), ``binary`` (``bytes``, UTF-8 by
#:   default), ``path`` (``pathlib.Path``);
#: - ``uuid1`` ... ``uuid8`` (``UUID1`` ... ``UUID8``): see :func:`_pydantic_uuid`;
#: - ``ipvanyaddress`` (``IPvAnyAddress``): see :func:`_pydantic_ip_address`.
#:
#: Not defined (a caller may define them): ``ipvanyinterface`` and ``ipvanynetwork`` (netmask
#: forms, host bits), ``base64``, ``multi-host-uri`` (pydantic's URL parser), ``file-path`` and
#: ``directory-path`` (they depend on the file system), ``color``.
PYDANTIC_FORMATS = {
    "password": "(?s).*",
    "binary": "(?s).*",
    "path": "(?s).*",
    **{f"uuid{v}": _pydantic_uuid(v) for v in (1, 3, 4, 5, 6, 7, 8)},
    "ipvanyaddress": _pydantic_ip_address(),
}

#: formats of the JSON Schema vocabulary that are not supported, and why (the others are unknown)
UNSUPPORTED_FORMATS = {
    "regex": "an ECMA-262 pattern's syntax nests groups: not a regular language",
    "idn-hostname": "IDNA2008's rules (Punycode, contextual rules) are not enforced",
    "idn-email": "IDNA2008's rules (Punycode, contextual rules) are not enforced",
}

#: drafts whose relative JSON pointers take no index adjustment (draft-handrews-relative-json-pointer)
_RJP_WITHOUT_ADJUSTMENT = frozenset({"draft4", "draft6", "draft7", "draft2019-09"})


@cache
def format_expr(name: str, draft: str = "draft2020-12") -> Expr | None:
    """Content language of ``format: name`` under ``draft`` (None for formats that are not supported)."""
    if name == "relative-json-pointer" and draft in _RJP_WITHOUT_ADJUSTMENT:
        return _relative_json_pointer(adjust=False)
    b = _builders().get(name) if isinstance(name, str) else None
    return None if b is None else b()
