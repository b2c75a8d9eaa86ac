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
        ByteBuffer header = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        header.put("JLSAMPLE".getBytes(StandardCharsets.US_ASCII)).putInt(1).putInt(RECORD_BYTES);
        header.position(64).flip();
        writeFully(header);
    }

    public void write(int pair, long seq, long tSendNs, long tRecvNs) throws IOException {
        if (buffer.remaining() < RECORD_BYTES) flush();
        buffer.putInt(pair).putInt(0).putLong(seq).putLong(tSendNs).putLong(tRecvNs);
        count++;
    }

    /** Writes the footer, fsyncs and renames the file into place. */
    public void finish(boolean partial) throws IOException {
        flush();
        ByteBuffer footer = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
        footer.put("JLFOOTER".getBytes(StandardCharsets.US_ASCII)).putLong(count).putInt((int) crc.getValue())
                .putInt(0).putLong(partial ? 1L : 0L).flip();
        writeFully(footer);
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
