/* text.c - the lexical rules of the textual IR that the printer and the
 * parser share: which names may go unquoted, how a string's bytes are
 * escaped, and how a literal token becomes a tensor element. The printer
 * (ir/print.c) checks every inline element by reading it back through
 * ir_text_scan_elem, the same function the parser (ir/parse.c) uses. */
#include "ir/text_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ir_text_is_ident(const char *s, size_t n)
{
    if (n == 0 || !ir_text_ident_start((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!ir_text_ident_char((unsigned char)s[i]))
            return false;
    return true;
}

bool ir_text_is_bare_name(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!ir_text_name_char((unsigned char)s[i]))
            return false;
    return true;
}

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0 if there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

size_t ir_text_escape_char(const unsigned char *s, size_t n, char out[8], size_t *used)
{
    unsigned char c = s[0];
    *used = 1;
    switch (c) {
    case '"': strcpy(out, "\\\""); return 2;
    case '\\': strcpy(out, "\\\\"); return 2;
    case '\n': strcpy(out, "\\n"); return 2;
    case '\t': strcpy(out, "\\t"); return 2;
    case '\r': strcpy(out, "\\r"); return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        out[0] = (char)c;
        out[1] = 0;
        return 1;
    }
    size_t u = c >= 0x80 ? utf8_len(s, n) : 0;
    /* U+0080..U+009F (C1 controls) are valid UTF-8 but invisible. */
    if (u && !(c == 0xc2 && s[1] < 0xa0)) {
        memcpy(out, s, u);
        out[u] = 0;
        *used = u;
        return u;
    }
    snprintf(out, 8, "\\x%02x", c);
    return 4;
}

void ir_text_show(char *out, size_t cap, const char *prefix, const char *s, size_t n, char kind)
{
    size_t o = (size_t)snprintf(out, cap, "%s", prefix);
    bool bare = (kind == 'n' && ir_text_is_bare_name(s, n)) ||
                (kind == 'i' && ir_text_is_ident(s, n));
    if (o + 8 >= cap)
        return;
    if (!bare)
        out[o++] = '"';
    for (size_t i = 0; i < n;) {
        char e[8];
        size_t used, k = ir_text_escape_char((const unsigned char *)s + i, n - i, e, &used);
        if (o + k + 5 >= cap) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(out + o, e, k);
        o += k;
        i += used;
    }
    if (!bare)
        out[o++] = '"';
    out[o] = 0;
}

void ir_text_locale_enter(ir_text_locale *l)
{
    l->c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    l->old = l->c ? uselocale(l->c) : (locale_t)0;
}

void ir_text_locale_leave(ir_text_locale *l)
{
    if (l->c) {
        uselocale(l->old);
        freelocale(l->c);
    }
}

/* ---- elements ------------------------------------------------------------ */

static bool tok_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && !memcmp(s, lit, n);
}

/* -?[0-9]+ -> sign and magnitude; false on syntax or > UINT64_MAX. */
static bool scan_uint(const char *s, size_t n, bool *neg, uint64_t *mag, const char **why)
{
    size_t i = 0;
    *neg = n > 0 && s[0] == '-';
    i = *neg;
    if (i == n) {
        *why = "expected a number";
        return false;
    }
    uint64_t m = 0;
    for (; i < n; i++) {
        if (!ir_text_is_digit((unsigned char)s[i])) {
            *why = "expected an integer";
            return false;
        }
        if (m > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10) {
            *why = "integer out of range";
            return false;
        }
        m = m * 10 + (uint64_t)(s[i] - '0');
    }
    *mag = m;
    return true;
}

/* The shape the lexer gives decimals: -?D(.D)?([eE][+-]?D)? */
static bool is_decimal(const char *s, size_t n)
{
    size_t i = n && s[0] == '-', d = 0;
    while (i < n && ir_text_is_digit((unsigned char)s[i]))
        i++, d++;
    if (!d)
        return false;
    if (i < n && s[i] == '.') {
        i++;
        d = 0;
        while (i < n && ir_text_is_digit((unsigned char)s[i]))
            i++, d++;
        if (!d)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        d = 0;
        while (i < n && ir_text_is_digit((unsigned char)s[i]))
            i++, d++;
        if (!d)
            return false;
    }
    return i == n;
}

static int scan_float(ir_dtype dt, const char *s, size_t n, void *out, const char **why)
{
    bool neg = n && s[0] == '-';
    bool nan = tok_is(s + neg, n - neg, "nan");
    if (!nan && !tok_is(s + neg, n - neg, "inf") && !is_decimal(s, n)) {
        *why = "expected a number";
        return -1;
    }
    char buf[128];
    if (n >= sizeof buf) {
        *why = "number has too many digits";
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = 0;
    if (dt == IR_F64) {
        double v;
        if (nan) {
            uint64_t u = neg ? 0xfff8000000000000ull : 0x7ff8000000000000ull;
            memcpy(&v, &u, 8);
        } else
            v = strtod(buf, NULL);
        memcpy(out, &v, 8);
        return 0;
    }
    float f;
    if (nan) {
        uint32_t u = neg ? 0xffc00000u : 0x7fc00000u;
        memcpy(&f, &u, 4);
    } else
        f = strtof(buf, NULL);
    uint16_t h;
    switch (dt) {
    case IR_F32: memcpy(out, &f, 4); return 0;
    case IR_F16: h = ir_f32_to_f16(f); memcpy(out, &h, 2); return 0;
    case IR_BF16: h = ir_f32_to_bf16(f); memcpy(out, &h, 2); return 0;
    default: *why = "not a float dtype"; return -1;
    }
}

int ir_text_scan_elem(ir_dtype dt, const char *s, size_t n, void *out, const char **why)
{
    if (ir_dtype_is_float(dt))
        return scan_float(dt, s, n, out, why);
    if (dt == IR_BOOL) {
        uint8_t b;
        if (tok_is(s, n, "true") || tok_is(s, n, "1"))
            b = 1;
        else if (tok_is(s, n, "false") || tok_is(s, n, "0"))
            b = 0;
        else {
            *why = "expected true or false";
            return -1;
        }
        memcpy(out, &b, 1);
        return 0;
    }
    if (!ir_dtype_is_int(dt)) {
        *why = "no elements of this dtype";
        return -1;
    }
    bool neg;
    uint64_t m;
    if (!scan_uint(s, n, &neg, &m, why))
        return -1;
    size_t size = ir_dtype_size(dt);
    int bits = (int)size * 8;
    uint64_t u;
    if (ir_dtype_is_signed(dt)) {
        uint64_t lim = (uint64_t)1 << (bits - 1); /* |min|; max is lim - 1 */
        if (neg ? m > lim : m >= lim) {
            *why = "integer out of range for its dtype";
            return -1;
        }
        u = neg ? (uint64_t)0 - m : m;
    } else {
        if ((neg && m) || (bits < 64 && m >> bits)) {
            *why = "integer out of range for its dtype";
            return -1;
        }
        u = m;
    }
    /* Little-endian host: the low bytes of u are the element. */
    switch (size) {
    case 1: { uint8_t v = (uint8_t)u; memcpy(out, &v, 1); break; }
    case 2: { uint16_t v = (uint16_t)u; memcpy(out, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)u; memcpy(out, &v, 4); break; }
    default: memcpy(out, &u, 8); break;
    }
    return 0;
}
