# The pastenode image, built from nothing pulled: static binaries that the
# Makefile builds first (`make static`, or `make docker-image` for both).
# The binaries carry their version (`make static` stamps it, see
# internal/buildinfo); the labels repeat it for whoever inspects the image.
FROM scratch
ARG VERSION=""
ARG REVISION=""
LABEL org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION"
COPY bin/static/pastenode bin/static/pastectl /
# An empty /data owned by the unprivileged user: a new named volume takes
# this ownership, so the node can write its Raft state.
COPY --chown=65532:65532 docker/data /data
COPY --chown=65532:65532 docker/data /tmp
USER 65532:65532
VOLUME /data
ENV PASTE_DATA_DIR=/data \
    PASTE_HTTP_ADDR=0.0.0.0:8080 \
    PASTE_RAFT_ADDR=0.0.0.0:7000 \
    PASTE_GOSSIP_ADDR=0.0.0.0:7946
EXPOSE 8080 7000 7946 7946/udp
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=3 CMD ["/pastectl", "health"]
ENTRYPOINT ["/pastenode"]
