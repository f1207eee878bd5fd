# Production image for the service's Node processes: the gateway (src/main.ts), the Temporal
# worker (temporal/worker-main.ts, which drives Debian's chromium for client-rendered platforms)
# and the simulator (src/simulator/main.ts). TypeScript runs through tsx.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:20-bookworm-slim
ENV NODE_ENV=production
RUN apt-get update && apt-get install -y --no-install-recommends chromium && rm -rf /var/lib/apt/lists/*
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
