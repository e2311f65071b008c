# ops-console in a container: built from source in one stage, run from a small one as a
# user without privileges. See docs/operations.md ("Running on AWS").
#
#   docker build -t ops-console .
#   docker run -p 3000:3000 -e OPS_ENV=prod -e AWS_REGION=eu-west-1 \
#     -e OPS_AUTH_TRUSTED_PROXIES=10.0.0.0/16 \
#     -e IDEMPOTENCY_SECRET=... -e OPS_EVENTS_WEBHOOK_SECRET=... ops-console

# Node.js 20 for Tailwind v4 (Debian bookworm's is 18).
FROM node:20-bookworm-slim AS node

# --- build: the server binary and the site (wasm, CSS), precompressed -------------------
FROM rust:1.95-bookworm AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules /usr/local/lib/node_modules
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm
RUN rustup target add wasm32-unknown-unknown \
 && CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo install cargo-leptos --version 0.3.10 --locked
WORKDIR /src
# The wasm-bindgen CLI must match the crate pinned in Cargo.lock.
COPY Cargo.toml Cargo.lock ./
RUN version="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)" \
 && cargo install wasm-bindgen-cli --version "$version"
# Tailwind and binaryen's wasm-opt, from the project's package.json.
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY . .
ENV PATH=/src/node_modules/.bin:$PATH LEPTOS_OUTPUT_NAME=ops-console
# Pages are lazy routes (`--split`); each page's pieces then go in one bundle.
RUN cargo leptos build --release --precompress --split \
 && node scripts/bundle-wasm.mjs target/site/pkg

# --- run ---------------------------------------------------------------------------------
FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin ops
WORKDIR /app
COPY --from=build /src/target/release/ops-console /app/ops-console
COPY --from=build /src/target/site /app/site
# The settings file carries the event rules; mount another and point OPS_CONFIG at it.
COPY --from=build /src/Leptos.toml /app/Leptos.toml
USER 10001
ENV LEPTOS_SITE_ROOT=/app/site \
    OPS_CONFIG=/app/Leptos.toml \
    OPS_APP_SITE_ADDR=0.0.0.0:3000 \
    OPS_ENV=prod
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:3000/healthz"]
ENTRYPOINT ["/app/ops-console"]
CMD ["serve"]
