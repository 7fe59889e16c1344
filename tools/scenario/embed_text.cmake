# tools/scenario/embed_text.cmake — turns a text file into a C++ translation unit at build time:
#   cmake -DIN=file.yaml -DOUT=file.cpp -DSYMBOL=name -P embed_text.cmake
# defines `const std::string_view ls::tools::embedded::<SYMBOL>` holding the file's bytes
# as a raw string literal (no external tools: the build needs only CMake).
file(READ "${IN}" content)
set(delim "LSEMBED")
string(FIND "${content}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )${delim}\"")
endif()
set(text "// Generated from ${IN} by tools/scenario/embed_text.cmake. Do not edit.
#include <string_view>
namespace ls::tools::embedded {
extern const std::string_view ${SYMBOL};
const std::string_view ${SYMBOL} = R\"${delim}(${content})${delim}\";
}  // namespace ls::tools::embedded
")
# Rewrite only when the text changes, so dependants are not rebuilt needlessly.
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${text}")
