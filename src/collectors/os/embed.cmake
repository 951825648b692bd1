# Writes the bytes of IN into OUT as a C++ array NAME (and NAME_size): the BPF
# object built from python_stacks.bpf.c, linked into the supervisor.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 row)
string(REGEX REPLACE "(${row})" "\\1\n" body "${body}")
file(WRITE "${OUT}" "// Generated from ${IN} by embed.cmake.\n#include <cstddef>\nnamespace strata::collectors::os {\nextern const unsigned char ${NAME}[] = {\n${body}\n};\nextern const size_t ${NAME}_size = ${bytes};\n}  // namespace strata::collectors::os\n")
