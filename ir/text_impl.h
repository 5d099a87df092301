/* text_impl.h - lexical rules shared by the .icc printer (ir/print.c) and
 * parser (ir/parse.c); private to them. Keeping one copy of each rule is
 * what makes print -> parse -> print exact: the printer decides how to
 * spell a name or an element by asking the same functions the parser
 * uses to read it back. The rules themselves are specified in docs/ir.md. */
#ifndef ICC_TEXT_IMPL_H
#define ICC_TEXT_IMPL_H

#include <locale.h>

#include "ir/ir.h"

/* ident = [A-Za-z_][A-Za-z0-9_]*  (ops, dtypes, keywords, symbols, attrs) */
static inline bool ir_text_ident_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static inline bool ir_text_ident_char(int c)
{
    return ir_text_ident_start(c) || (c >= '0' && c <= '9');
}
/* bare value and graph names after '%' / '@': [A-Za-z0-9_./-]+ */
static inline bool ir_text_name_char(int c)
{
    return ir_text_ident_char(c) || c == '.' || c == '/' || c == '-';
}
static inline bool ir_text_is_digit(int c) { return c >= '0' && c <= '9'; }

bool ir_text_is_ident(const char *s, size_t n);
bool ir_text_is_bare_name(const char *s, size_t n);

/* The spelling, inside double quotes, of the character that starts at s
 * (n > 0 bytes left): itself, an escape, or a whole valid UTF-8
 * sequence. Writes at most 4 bytes plus a NUL to out; *used receives the
 * bytes of s consumed. Returns strlen(out). */
size_t ir_text_escape_char(const unsigned char *s, size_t n, char out[8], size_t *used);

/* Renders s for an error message: prefix + (bare if allowed, else
 * quoted and escaped), truncated to fit cap. kind 'n' allows bare value
 * names, 'i' bare identifiers, 'q' always quotes. */
void ir_text_show(char *out, size_t cap, const char *prefix, const char *s, size_t n, char kind);

/* Reads one element of dtype dt from a literal token (s, n bytes, not
 * NUL-terminated) into out (ir_dtype_size(dt) bytes). Accepted: integers
 * -?[0-9]+ for every dtype; decimals -?D(.D)?([eE][+-]?D)? and inf, -inf,
 * nan, -nan for float dtypes; true and false for bool. Returns 0, or -1
 * with a reason in *why. */
int ir_text_scan_elem(ir_dtype dt, const char *s, size_t n, void *out, const char **why);

/* Numbers are written and read in the C locale, whatever locale the
 * program has set: enter switches this thread to it, leave switches back.
 * If the C locale cannot be made, the current one stays. */
typedef struct ir_text_locale {
    locale_t c, old;
} ir_text_locale;
void ir_text_locale_enter(ir_text_locale *l);
void ir_text_locale_leave(ir_text_locale *l);

#endif
