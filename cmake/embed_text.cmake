# embed_text.cmake - writes OUT, a C file defining the NUL-terminated
# string cg_cuda_prelude with IN's text (bytes as hex, so any text works).
# Usage: cmake -DIN=file -DOUT=file.c -P embed_text.cmake
file(READ "${IN}" _hex HEX)
string(REGEX REPLACE "(..)" "0x\\1," _bytes "${_hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed_text.cmake: do not edit */\nconst char cg_cuda_prelude[] = {${_bytes}0x00};\n")
