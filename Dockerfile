# Worker, CLI and reference-provider image (the provider from tools/, built beside the product). Build: docker build -t scrape-orchestrator .
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/
RUN npm ci
COPY tsconfig.json tsconfig.build.json tsconfig.tools.json ./
COPY src ./src
COPY tools ./tools
# The product (dist/), and the reference provider for the compose topology's `sim` service (dist-tools/).
RUN npm run build && npm run build:tools && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/dist-tools ./dist-tools
COPY package.json ./
COPY sample-site ./sample-site
USER node
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["worker"]
