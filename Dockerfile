# Production image for the service's Node processes: the gateway (src/main.ts), the Temporal
# workers (temporal/worker-main.ts: WORKER_ROLE=scrape drives Debian's chromium for client-rendered
# platforms, WORKER_ROLE=deliver never loads it), the one-shot jobs (db/roles-main.ts,
# db/migrate.ts) and the simulator (src/simulator/main.ts). TypeScript runs through tsx.
# Node 24 on Debian trixie: the only uWebSockets.js build with a Node 24 binary needs glibc 2.38
# (bookworm has 2.36), so deploy/image-uws.sh swaps it in here, after npm ci; development and CI
# stay on Node 20 with package.json's build. Why, and how this is checked without a container
# engine (deploy/check-trixie-image.sh): docs/node-versions.md.
FROM node:24-trixie-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY deploy/image-uws.sh ./deploy/
RUN npm ci --omit=dev --ignore-scripts && sh deploy/image-uws.sh && npm cache clean --force

FROM node:24-trixie-slim
ENV NODE_ENV=production
# certutil (libnss3-tools): Chromium trusts SCRAPE_CA_FILE through an NSS database of its own (src/scrapers/chromium-ca.ts).
RUN apt-get update && apt-get install -y --no-install-recommends chromium libnss3-tools && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY db ./db
COPY temporal ./temporal
COPY workflows ./workflows
COPY activities ./activities
USER node
EXPOSE 8080 9464
CMD ["node", "--import", "tsx", "src/main.ts"]
