# Production image for the service's Node processes (today: the gateway; the stream, worker
# and simulator entry points join it as their issues land). TypeScript runs through tsx.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY db ./db
USER node
EXPOSE 8080 9464
CMD ["node", "--import", "tsx", "src/main.ts"]
