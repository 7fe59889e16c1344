# tests/mpi_search_compare.cmake — `mpirun -np 2 layoutsim search` writes the same
# CSV and JSON (wall times aside) as the single-process run.
# -DLAYOUTSIM=... -DMPIEXEC=... -DSCENARIO=... -DWORK_DIR=... [-DMPI_FLAGS="a;b"]
file(MAKE_DIRECTORY ${WORK_DIR})
# tp 8: about 1,300 points and 100 remedy candidates, so that both analytic passes and
# the simulations are split and exchanged, in seconds (minutes under the sanitizers).
set(ARGS search ${SCENARIO} --simulate-top 6 --jobs 1 --vary mbs=1,2 --vary recompute=none,selective --fix cp=1 --fix tp=8)
execute_process(COMMAND ${LAYOUTSIM} ${ARGS} --csv ${WORK_DIR}/one.csv --json ${WORK_DIR}/one.json RESULT_VARIABLE rc1 OUTPUT_QUIET)
execute_process(COMMAND ${MPIEXEC} -np 2 ${MPI_FLAGS} ${LAYOUTSIM} ${ARGS} --csv ${WORK_DIR}/two.csv --json ${WORK_DIR}/two.json
                RESULT_VARIABLE rc2 OUTPUT_QUIET)
foreach(rc rc1 rc2)
  if(NOT ${rc} EQUAL 0)
    message(FATAL_ERROR "search exited ${${rc}} (${rc})")
  endif()
endforeach()
file(READ ${WORK_DIR}/one.csv a)
file(READ ${WORK_DIR}/two.csv b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "CSV differs between one process and mpirun -np 2 (${WORK_DIR})")
endif()
foreach(f one two)
  file(READ ${WORK_DIR}/${f}.json j)
  string(REGEX REPLACE "\"[a-z_]*wall_s\": [^\n]*\n" "" j "${j}")
  string(REGEX REPLACE "\"threads\": [^\n]*\n" "" j "${j}")
  set(${f}_json "${j}")
endforeach()
if(NOT one_json STREQUAL two_json)
  message(FATAL_ERROR "JSON (wall times aside) differs between one process and mpirun -np 2 (${WORK_DIR})")
endif()
string(LENGTH "${a}" n)
message(STATUS "identical: ${n} bytes of CSV")
