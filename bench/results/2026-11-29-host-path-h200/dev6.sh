source .devpack/setup.sh >/dev/null 2>&1
here=$PWD
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
rm -rf /tmp/old && mkdir /tmp/old && cp -a . /tmp/old/ && (cd /tmp/old && patch -R -p1 < "$here/.devdata/write.patch" | tail -1)
cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve clsolved >/tmp/build0.log 2>&1 || { tail -20 /tmp/build0.log; exit 1; }
grep -c "solution.mtx\", dir" /tmp/old/net/scheduler.c
uptime
for pass in 1 2; do
  for b in b0 b1; do
    echo "=== pass $pass, build $b ($( [ $b = b0 ] && echo 'before: solution.mtx written durably' || echo 'now: solution.bin only, text rendered at download'))"
    BUILD=/tmp/$b N=200 REPS=2 DEVICE=gpu DAEMONS=plain bash bench/host-path.sh 2>&1 | grep -v "^    mm_read_csr"
  done
done | tee $OUT/host-path.txt
