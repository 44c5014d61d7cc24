#pragma once
// The MPI communicator (distributed/mpi.cpp; built with SPLAT_MPI, i.e. when CMake finds MPI).
#include <memory>

#include "distributed/communicator.h"

namespace splat::dist {

// Whether this build has MPI (SPLAT_MPI).
bool have_mpi();

// MPI_Init_thread, and a communicator over MPI_COMM_WORLD that calls MPI_Finalize when destroyed.
// Without MPI in the build: splat::Error saying so (the process was launched as one of several).
std::unique_ptr<Communicator> make_mpi_communicator(int& argc, char**& argv);

}  // namespace splat::dist
