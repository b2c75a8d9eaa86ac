package dev.jitterlab.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32;

/**
 * Writes the raw sample file of docs/run-format.md: a 64-byte header, 32-byte little-endian
 * records (pair, 0, seq, t_send_ns, t_recv_ns) and a footer with the count, the CRC-32 of the
 * record bytes and the partial flag. Writes go to {@code path.tmp}, renamed on {@link #finish}.
 */
public final class RawSampleWriter implements AutoCloseable {
    static final int RECORD_BYTES = 32;
    /** The extended record of {@code jitterlab net} (raw-samples.json, extended_records.net). */
    static final int NET_RECORD_BYTES = 56;
    static final int HEADER_BYTES = 64, FOOTER_BYTES = 32;
    private static final int BATCH = 4096;

    private final Path path;
    private final Path tmp;
    private final FileChannel channel;
    private final ByteBuffer buffer = ByteBuffer.allocate(RECORD_BYTES * BATCH).order(ByteOrder.LITTLE_ENDIAN);
    private final CRC32 crc = new CRC32();
    private long count;
    private boolean finished;

    public RawSampleWriter(Path path) throws IOException {
        this.path = path;
        this.tmp = path.resolveSibling(path.getFileName() + ".tmp");
        this.channel = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING);
        writeFully(ByteBuffer.wrap(header(RECORD_BYTES)));
    }

    /** The 64-byte header of a raw file of {@code recordBytes}-byte records. */
    static byte[] header(int recordBytes) {
        byte[] h = new byte[HEADER_BYTES];
        ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN).put("JLSAMPLE".getBytes(StandardCharsets.US_ASCII))
                .putInt(1).putInt(recordBytes);
        return h;
    }

    /** The 32-byte footer: record count, CRC-32 of the record bytes, partial flag. */
    static byte[] footer(long count, long crc, boolean partial) {
        byte[] f = new byte[FOOTER_BYTES];
        ByteBuffer.wrap(f).order(ByteOrder.LITTLE_ENDIAN).put("JLFOOTER".getBytes(StandardCharsets.US_ASCII))
                .putLong(count).putInt((int) crc).putInt(0).putLong(partial ? 1L : 0L);
        return f;
    }

    public void write(int pair, long seq, long tSendNs, long tRecvNs) throws IOException {
        if (buffer.remaining() < RECORD_BYTES) flush();
        buffer.putInt(pair).putInt(0).putLong(seq).putLong(tSendNs).putLong(tRecvNs);
        count++;
    }

    /** Writes the footer, fsyncs and renames the file into place. */
    public void finish(boolean partial) throws IOException {
        flush();
        writeFully(ByteBuffer.wrap(footer(count, crc.getValue(), partial)));
        channel.force(true);
        channel.close();
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        finished = true;
    }

    private void flush() throws IOException {
        buffer.flip();
        crc.update(buffer.duplicate());
        writeFully(buffer);
        buffer.clear();
    }

    private void writeFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) channel.write(b);
    }

    @Override
    public void close() throws IOException {
        if (!finished && channel.isOpen()) channel.close();  // no footer: readers see a truncated file
    }
}
