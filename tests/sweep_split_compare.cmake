# tests/sweep_split_compare.cmake — a sweep split over processes writes what the
# single process writes, byte for byte: the table on stdout, the errors on stderr,
# --csv, --json and --plot (tools/study/sweep_shard.hpp).
#   MODE=mpi:   `mpirun -np 2 layoutsim sweep ...` (rank 0 writes)
#   MODE=shard: `--shard I/3 --json part-I.json` for I = 0..2, then `--merge part-*.json`
# -DLAYOUTSIM=... -DSCENARIO=... -DWORK_DIR=... -DMODE=mpi|shard [-DMPIEXEC=... -DMPI_FLAGS="a;b"]
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
# Nine points, six of them invalid (answers, with their reasons), sorted and cut, so
# that the split has to carry errors, order and selection across processes.
set(ARGS sweep ${SCENARIO} --set layout.microbatches=4,8,16 --set layout.virtual_stages=1,2,3
         --set layout.schedule=interleaved-1f1b --sort step_time --top 7 --jobs 1 --quiet)

function(run_to prefix)  # run_to(PREFIX COMMAND...): PREFIX.out, PREFIX.err, PREFIX.csv/.json/.svg
  execute_process(COMMAND ${ARGN} --json ${WORK_DIR}/${prefix}.json --plot ${WORK_DIR}/${prefix}.svg
                  OUTPUT_FILE ${WORK_DIR}/${prefix}.out ERROR_FILE ${WORK_DIR}/${prefix}.err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${prefix}: exited ${rc} (${WORK_DIR}/${prefix}.err)")
  endif()
  execute_process(COMMAND ${ARGN} --csv ${WORK_DIR}/${prefix}.csv OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${prefix} --csv: exited ${rc}")
  endif()
endfunction()

run_to(one ${LAYOUTSIM} ${ARGS})
if(MODE STREQUAL "mpi")
  run_to(split ${MPIEXEC} -np 2 ${MPI_FLAGS} ${LAYOUTSIM} ${ARGS})
elseif(MODE STREQUAL "shard")
  # The shards run without --sort / --top (each would cut its own part); the merge
  # applies them to the whole sweep.
  string(REPLACE ";--sort;step_time;--top;7" "" shard_args "${ARGS}")
  set(parts)
  foreach(i 0 1 2)
    execute_process(COMMAND ${LAYOUTSIM} ${shard_args} --shard ${i}/3 --json ${WORK_DIR}/part-${i}.json
                    OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc)
    if(rc GREATER 1)  # 1: every point of this shard is invalid, which is still an answer
      message(FATAL_ERROR "shard ${i}/3 exited ${rc}")
    endif()
    list(APPEND parts ${WORK_DIR}/part-${i}.json)
  endforeach()
  run_to(split ${LAYOUTSIM} ${ARGS} --merge ${parts})
else()
  message(FATAL_ERROR "MODE must be mpi or shard, got '${MODE}'")
endif()

foreach(ext out err csv json svg)
  file(READ ${WORK_DIR}/one.${ext} a)
  file(READ ${WORK_DIR}/split.${ext} b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "${MODE}: .${ext} differs from the single process's (${WORK_DIR}/one.${ext} vs split.${ext})")
  endif()
endforeach()
file(READ ${WORK_DIR}/one.csv a)
string(LENGTH "${a}" n)
message(STATUS "${MODE}: identical outputs (${n} bytes of CSV)")
