# package.cmake: the Debian package. `cpack -G DEB` in a build directory
# (after `cmake --build`) writes clsolve_VERSION_ARCH.deb holding what
# `cmake --install --prefix /usr` installs (both programs, their man pages
# and bash completion, the systemd unit, the example configuration) plus
# /etc/clsolve/clsolved.conf, a conffile the unit reads, and the
# maintainer scripts of deploy/debian/ (the clsolve user, its state
# directory, a generated token). The libraries the programs link are
# declared by dpkg-shlibdeps (package dpkg-dev); what they run or load
# without linking is declared here: mpirun (openmpi-bin, the unit's
# ExecStart) and an OpenCL platform (PoCL's CPU device, or any ICD).
# tests/cli/test_deb.sh builds it, installs it with dpkg -i and solves a
# shipped example with the installed program.
install(FILES ${CMAKE_SOURCE_DIR}/deploy/clsolved.conf.example DESTINATION /etc/clsolve
        RENAME clsolved.conf COMPONENT conffile EXCLUDE_FROM_ALL)
file(WRITE ${CMAKE_BINARY_DIR}/deploy/debian/conffiles "/etc/clsolve/clsolved.conf\n")
foreach(script postinst prerm postrm)
  configure_file(${CMAKE_SOURCE_DIR}/deploy/debian/${script}
                 ${CMAKE_BINARY_DIR}/deploy/debian/${script} COPYONLY)
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME clsolve)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "clsolve maintainers <clsolve@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "sparse SPD solver service: conjugate gradients on OpenCL devices over MPI")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "clsolve solves sparse symmetric positive-definite systems (Matrix Market\n\
files) with preconditioned conjugate gradients on OpenCL devices, partitioned\n\
over MPI ranks; clsolved serves the same solver over HTTP with a durable job\n\
store, and runs GPU physics jobs (mass-spring bodies, model-reduction\n\
deformers, mesh curvature, N-body).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin, pocl-opencl-icd | opencl-icd, adduser")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# one package of the default component and /etc's file, which plain
# `cmake --install` leaves out (EXCLUDE_FROM_ALL: a user's prefix is no /etc)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified conffile)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_BINARY_DIR}/deploy/debian/conffiles ${CMAKE_BINARY_DIR}/deploy/debian/postinst
    ${CMAKE_BINARY_DIR}/deploy/debian/prerm ${CMAKE_BINARY_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
