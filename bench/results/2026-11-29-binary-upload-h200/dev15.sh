source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime
for pass in 1 2; do
  for F in mtx bin; do
    echo "=== pass $pass, FORMAT=$F"
    FORMAT=$F BUILD=/tmp/b1 N=200 REPS=2 DEVICE=gpu DAEMONS=plain bash bench/host-path.sh 2>&1 | grep -v "^    mm_read_csr"
  done
done | tee $OUT/host-path-binary.txt
