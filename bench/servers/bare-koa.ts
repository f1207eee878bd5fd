// Baseline for bench:gateway: a bare Koa app answering a constant JSON body.
import Koa from 'koa';

const app = new Koa();
app.use((ctx) => {
  ctx.body = { status: 'ok' };
});
app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
