# tools/dev/update_readme_keys.cmake — replaces the README's generated scenario reference
# (between <!-- keys:begin --> and <!-- keys:end -->) with `layoutsim keys --markdown`.
# cmake -DLAYOUTSIM=path/to/layoutsim -DREADME=path/to/README.md -P update_readme_keys.cmake
execute_process(COMMAND ${LAYOUTSIM} keys --markdown OUTPUT_VARIABLE tables RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${LAYOUTSIM} keys --markdown failed (${rc})")
endif()
file(READ ${README} text)
set(begin_marker "<!-- keys:begin -->\n")
string(FIND "${text}" "${begin_marker}" begin)
string(FIND "${text}" "<!-- keys:end -->" end)
if(begin LESS 0 OR end LESS begin)
  message(FATAL_ERROR "${README}: no <!-- keys:begin --> ... <!-- keys:end --> section")
endif()
string(LENGTH "${begin_marker}" marker_length)
math(EXPR body_start "${begin} + ${marker_length}")
string(SUBSTRING "${text}" 0 ${body_start} head)
string(SUBSTRING "${text}" ${end} -1 tail)
file(WRITE ${README} "${head}${tables}${tail}")
