import { randomBytes } from 'node:crypto'
import t from 'tap'
import { joinBodyParts } from '../../src/http/join-body-parts.js'

t.test(
  'each body is its parts in order, and later bodies never overwrite earlier ones',
  async (t) => {
    const bodies: { body: Buffer; expected: Buffer }[] = []
    // Enough bodies of varied, odd sizes to fill several slabs.
    for (let index = 0; index < 400; index++) {
      const head = randomBytes(1 + ((index * 997) % 4000))
      const middle = randomBytes((index * 31) % 300)
      const tail = randomBytes(1 + ((index * 613) % 3000))
      bodies.push({
        body: joinBodyParts(head, middle, tail),
        expected: Buffer.concat([head, middle, tail]),
      })
    }
    t.ok(
      bodies.every(({ body, expected }) => body.equals(expected)),
      'every body still holds its own bytes',
    )
  },
)

t.test('a body larger than a slab cut gets a buffer of its own', async (t) => {
  const head = randomBytes(40_000)
  const body = joinBodyParts(head, Buffer.alloc(0), Buffer.from('}'))
  t.equal(body.length, 40_001)
  t.ok(body.subarray(0, 40_000).equals(head))
  t.equal(body.toString('latin1', 40_000), '}')
})
