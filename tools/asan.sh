#!/usr/bin/env bash
# Run the engines' property tests (BPE's, the training sources' for the chunk counter, Unigram's and WordPiece's, its encoder's, and the bounds on long chunks) against the compiled engines built with AddressSanitizer.
#
#     bash tools/asan.sh                 # the engine tests (a few minutes)
#     bash tools/asan.sh -k weighted     # extra pytest arguments are passed on
#
# The extension is rebuilt with -fsanitize=address in place of the installed one (the usual
# build is put back afterwards, however the script ends), and the interpreter runs with libasan
# preloaded. Leak checking is off: CPython itself keeps memory until exit, which LeakSanitizer
# would report.
set -euo pipefail
cd "$(dirname "$0")/.."
module="$(python -c 'import analyzer.bpe._engine as e; print(e.__file__)')"
unigram="$(python -c 'import analyzer.unigram._engine as e; print(e.__file__)')"
wordpiece="$(python -c 'import analyzer.wordpiece._engine as e; print(e.__file__)')"
backup="$(mktemp)"
backup_unigram="$(mktemp)"
backup_wordpiece="$(mktemp)"
reports="$(mktemp -d)"
cp "$module" "$backup"
cp "$unigram" "$backup_unigram"
cp "$wordpiece" "$backup_wordpiece"
trap 'cp "$backup" "$module"; cp "$backup_unigram" "$unigram"; cp "$backup_wordpiece" "$wordpiece"; rm -rf "$backup" "$backup_unigram" "$backup_wordpiece" "$reports"' EXIT
include="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
gcc -O1 -g -fsanitize=address -fno-omit-frame-pointer -std=c11 -Wall -Wextra -Wshadow \
    -pthread -shared -fPIC -I"$include" -Ianalyzer/bpe/engine \
    analyzer/bpe/engine/*.c -o "$module"
gcc -O1 -g -fsanitize=address -fno-omit-frame-pointer -std=c11 -Wall -Wextra -Wshadow \
    -ffp-contract=off -pthread -shared -fPIC -I"$include" -Ianalyzer/unigram/engine \
    analyzer/unigram/engine/*.c -o "$unigram" -lm
gcc -O1 -g -fsanitize=address -fno-omit-frame-pointer -std=c11 -Wall -Wextra -Wshadow \
    -pthread -shared -fPIC -I"$include" -Ianalyzer/wordpiece/engine \
    analyzer/wordpiece/engine/*.c -o "$wordpiece"
libasan="$(gcc -print-file-name=libasan.so)"
export ANALYZER_ENGINE=compiled
# Reports go to files (pytest captures the test's stderr), and are shown below.
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:log_path=$reports/asan"
LD_PRELOAD="$libasan" python -c "import analyzer.bpe._engine as e; print('AddressSanitizer build:', e.__file__)"
status=0
LD_PRELOAD="$libasan" python -m pytest -q -p no:cacheprovider \
    tests/test_bpe_engine.py tests/test_bpe_real_text.py tests/test_bpe_engines.py \
    tests/test_bpe_parity.py tests/test_bpe_continue.py tests/test_bpe_native_split.py \
    tests/test_bpe_pretokenize.py tests/test_sources.py tests/test_counting_parted.py \
    tests/test_unigram.py tests/test_bpe_lean.py tests/test_wordpiece.py \
    tests/test_wordpiece_encoder.py tests/test_long_chunks.py -n 0 "$@" || status=$?
if compgen -G "$reports/asan*" >/dev/null; then
    cat "$reports"/asan*
    echo "AddressSanitizer: errors reported (above)"
    exit 1
fi
[ "$status" -eq 0 ] && echo "AddressSanitizer: no error in the engine tests"
exit "$status"
